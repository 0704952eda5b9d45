"""Errors a client can see: an HTTP status, a stable code and a message naming the field."""

from __future__ import annotations


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: tuple[tuple[str, str], ...] = (),
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
        self.param = param

    def __repr__(self) -> str:
        return f"ApiError({self.status}, {self.code!r}, {self.message!r})"


def invalid(field: str, message: str) -> ApiError:
    return ApiError(400, "invalid_field", f"{field}: {message}", param=field)
