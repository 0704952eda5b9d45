"""A durable conversation's room: the rules around its turns (what a new message may add, the
history each turn sends the model again, the limits on bytes and images, the turn started and
recovered after a restart), as plain Python that the Durable Object's wiring drives and the host
tests drive with fakes."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from base import catalog
from base.catalog import ModelInfo
from base.errors import ApiError, ClientGone
from base.settings import Settings
from checks.chat_request import ChatRequest
from common.chat_events import DONE, ChatEncoder
from common.conversation_store import (
    Event,
    Store,
    message_bytes,
    split_events,
)
from doors.conversations.conversation_turn import (
    ENDING_RESERVE,
    RESTARTED,
    Recorder,
    Reply,
    Turn,
    Wiring,
    answer_of,
)
from streaming.relay import Finished, OneShot, Relay, relay_whole
from workers_ai import service

log = logging.getLogger("conversation")


def history_for(model: str, facts: ModelInfo, stored: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stored messages as `model` may receive them: checked when they were sent, for the
    model of their turn; a model that reads no images, or no https: images, is refused naming
    `model`, and reasoning goes back only to a model that reasons."""
    out = []
    for message in stored:
        content = message["content"]
        if isinstance(content, list):
            for part in content:
                if part.get("type") != "image_url":
                    continue
                if not facts.vision:
                    raise ApiError(
                        400,
                        "images_not_supported",
                        f"model: this conversation holds images and {model} reads text only; send to a vision model (GET /api/v1/models says which)",
                        param="model",
                    )
                url = part["image_url"]["url"]
                if not facts.remote_images and not url.startswith("data:"):
                    raise ApiError(
                        400,
                        "invalid_field",
                        f"model: this conversation holds https: images and {model} takes images only as data:image/...;base64 URLs",
                        param="model",
                    )
        sent = {"role": message["role"], "content": content}
        if message.get("reasoning") and facts.reasons:
            sent["reasoning"] = message["reasoning"]
        out.append(sent)
    return out


def images_in(content: object) -> int:
    if not isinstance(content, list):
        return 0
    return sum(1 for part in content if isinstance(part, dict) and part.get("type") == "image_url")


def _full(what: str, limit: int, name: str) -> ApiError:
    return ApiError(
        413,
        "conversation_too_large",
        f"{what} would take this conversation past its limit of {limit} {name.split('_')[-1].lower()} ({name}); start a new one.",
    )


class Room:
    """One conversation as its Durable Object holds it: the store, and the turn being written."""

    def __init__(self, store: Store, wiring: Wiring) -> None:
        self.store = store
        self.wiring = wiring
        self.turn: Turn | None = None
        # Told of each turn's end (its model, relay: usage and ending): the object writes the
        # turn's request line and counts its tokens there. Set by the message that starts it.
        self.on_turn: Callable[[Turn], None] | None = None

    def create(
        self,
        id: str,
        history: list[dict[str, Any]],
        settings: Settings,
        owner: str | None = None,
    ) -> Reply:
        size = sum(message_bytes(m["content"], m.get("reasoning")) for m in history)
        if size + ENDING_RESERVE > settings.max_conversation_bytes:
            raise _full(
                f"This history ({size} bytes)",
                settings.max_conversation_bytes,
                "MAX_CONVERSATION_BYTES",
            )
        images = sum(images_in(m["content"]) for m in history)
        if images > settings.max_conversation_images:
            raise _full(
                f"This history's {images} images",
                settings.max_conversation_images,
                "MAX_CONVERSATION_IMAGES",
            )

        def write() -> None:
            self.store.create(time.time(), owner)
            for message in history:
                self.store.add_message(
                    message["role"],
                    message["content"],
                    message.get("reasoning"),
                    message.get("details"),
                )

        self.store.atomic(write)
        return Reply(status=201, json={"id": id})

    def exists(self) -> bool:
        return self.store.exists()

    def get(self, id: str) -> Reply:
        out: dict[str, Any] = {
            "id": id,
            "messages": self.store.messages(),
            "streaming": self.turn is not None,
            "bytes": self.store.size,
        }
        branches = self.store.branches
        if branches is not None:
            out["branches"] = branches
        return Reply(json=out)

    def keep_branches(self, branches: dict[str, Any] | None) -> Reply:
        """A client's versions of this conversation (checked by the door), kept as they are."""
        self.store.atomic(lambda: self.store.keep_branches(branches))
        return Reply(json={"kept": branches is not None})

    def stop(self) -> Reply:
        stopped = self.turn is not None and self.turn.stop()
        return Reply(json={"stopped": stopped})

    def forget(self) -> None:
        """Before the storage is deleted: the turn's readers still get its end, and nothing
        more is stored."""
        if self.turn is not None:
            self.turn.deleted = True
            self.turn.stop()
        self.store.forget()

    def recover(self) -> None:
        """A turn marked streaming with none running here: the object was restarted mid-turn
        (evicted, redeployed). What was stored of its answer goes into the history, as a stop
        keeps it, and its readers get an error ending, not a stream that never ends."""
        if self.turn is not None or not self.store.streaming:
            return
        number = self.store.turn
        events = self.store.events_after(number, 0)
        ending: list[Event] = []
        if not events or events[-1].data != DONE:
            seq = events[-1].seq if events else 0
            ending = [
                Event(turn=number, seq=seq + 1 + i, data=part)
                for i, part in enumerate(split_events(ChatEncoder().failed(RESTARTED)))
            ]
        text, reasoning = answer_of(events)

        def write() -> None:
            # The turn's events were counted in memory only, by the object that was lost.
            self.store.grow(sum(len(e.data) for e in events), save=False)
            self.store.append_all(ending)
            self.store.add_message("assistant", text, reasoning or None)
            self.store.end_turn()

        self.store.atomic(write)

    def resume(self, after: tuple[int, int] | None) -> Reply:
        number = self.store.turn
        if number == 0:
            raise ApiError(404, "no_turn", "This conversation has no answer yet.")
        seq = after[1] if after is not None and after[0] == number else 0
        live = self.turn if self.turn is not None and self.turn.number == number else None
        if live is not None:
            live.flush()  # what the turn holds is stored first: the replay below has it all
        missed = self.store.events_after(number, seq)
        replay = b"".join(e.wire() for e in missed)
        if live is None:
            # An answer that has ended ends its replay with done, even past its last event.
            last = missed[-1].data if missed else b""
            return Reply(sse=replay if last == DONE else replay + DONE)
        reader = self.wiring.reader()
        if replay:  # then attached, with no await in between: nothing in the gap
            reader.send(replay)
        return Reply(reader=reader, detach=live.attach(reader))

    async def message(self, id: str, payload: dict[str, Any], settings: Settings) -> Reply:
        """A user's message: checked against the conversation's bounds, stored with the turn's
        start, and only then the model called; the answer's reader comes back at once."""
        if self.turn is not None:
            raise ApiError(
                409,
                "turn_in_progress",
                "An answer is still being written in this conversation; wait for it or stop it.",
            )
        if self.store.count() + 2 > settings.max_messages:
            raise ApiError(
                400,
                "too_many_messages",
                f"This conversation has reached the limit of {settings.max_messages} messages; start a new one.",
            )
        content = payload["content"]
        size = message_bytes(content, None)
        if self.store.size + size + ENDING_RESERVE > settings.max_conversation_bytes:
            raise _full(
                f"content: this message ({size} bytes)",
                settings.max_conversation_bytes,
                "MAX_CONVERSATION_BYTES",
            )
        model = str(payload["model"])
        stored = self.store.messages()
        images = sum(images_in(m["content"]) for m in stored) + images_in(content)
        if images > settings.max_conversation_images:
            raise _full(
                f"content: its images ({images} in all)",
                settings.max_conversation_images,
                "MAX_CONVERSATION_IMAGES",
            )
        user = {"role": "user", "content": content}
        request = ChatRequest(
            model=model,
            messages=(*history_for(model, catalog.info(model), stored), user),
            max_tokens=int(payload["max_tokens"]),
            temperature=payload.get("temperature"),
            reasoning_effort=payload.get("reasoning_effort"),
            stop=tuple(payload.get("stop") or ()),
        )
        numbers: list[int] = []

        def write() -> None:
            numbers.append(self.store.add_message("user", content))
            numbers.append(self.store.start_turn())

        try:
            self.store.atomic(write)
        except Exception as exc:
            log.error("a message could not be stored: %r", exc)
            raise ApiError(500, "internal_error", "The message could not be stored.") from None
        n, number = numbers
        room = settings.max_conversation_bytes - self.store.size - ENDING_RESERVE
        turn = Turn(
            self.store,
            number,
            grace=settings.resume_grace,
            wiring=self.wiring,
            room=room,
            on_done=self._done,
        )
        turn.encoder.model = model
        self.turn = turn  # from here a second message is 409, a stop or delete reaches it
        reader = self.wiring.reader()
        detach = turn.attach(reader)
        turn.opening = abort = self.wiring.abort()
        try:
            # The conversation's id is its session key: every turn reaches the replica with its cache.
            opened = await self.wiring.open(model, request.ai_inputs(), affinity=id, abort=abort)
        except ClientGone:  # stopped, deleted or left while the call opened: nothing ran
            relay = _relay(settings, turn.encoder, request, model)
            turn.run(relay, None)
            asked = turn.stop_asked
            turn.out(relay.cancel(asked[0] if asked else None))
            turn.ended()
            return Reply(reader=reader, detach=detach)
        except BaseException:
            self._take_back(turn, n, number)
            raise
        source = opened.source
        turn.model = opened.model
        if opened.model != model:  # message_stop names the fallback that answered
            turn.encoder.answered_by(opened.model)
        try:
            relay = _relay(settings, turn.encoder, request, opened.model)
            if isinstance(source, OneShot):  # a one-shot answer: relayed whole at once
                turn.run(relay, None)
                turn.out(relay_whole(relay, source))
                turn.ended()
            else:
                turn.run(relay, self.wiring.pipe(source, relay, turn.ended, turn.out))
        except BaseException:  # a bug: the call it opened is not left running for nobody
            if turn.pipe is None:
                if not isinstance(source, OneShot):
                    source.cancel()
                self._take_back(turn, n, number)
            raise
        return Reply(reader=reader, detach=detach)

    def _take_back(self, turn: Turn, n: int, number: int) -> None:
        """The model call failed before it answered: the message and the turn's start go back
        out (unless the conversation was deleted meanwhile), and its reader is closed."""
        turn.over = True
        for reader in turn.readers.values():
            reader.close()
        turn.readers.clear()
        if self.turn is turn:
            self.turn = None
        if turn.deleted:
            return

        def undo() -> None:
            self.store.remove_message(n)
            self.store.undo_turn(number)

        self.store.atomic(undo)

    def _done(self, turn: Turn) -> None:
        if self.turn is turn:
            self.turn = None
        if self.on_turn is not None:
            try:
                self.on_turn(turn)
            except Exception as exc:  # its line and count are lost; the turn is not
                log.error("turn %d: its end could not be logged: %r", turn.number, exc)
        if turn.deleted:
            return
        encoder = turn.encoder
        text = "".join(encoder.text)
        try:
            if text or encoder.reasoning or isinstance(encoder.ending, Finished):
                self.store.add_message(
                    "assistant", text, "".join(encoder.reasoning) or None, encoder.details()
                )
            self.store.end_turn()
        except Exception as exc:  # the turn stays marked streaming: recover() finishes it
            log.error("turn %d: its end could not be stored: %r", turn.number, exc)


def _relay(settings: Settings, encoder: Recorder, request: ChatRequest, model: str) -> Relay:
    """The turn's relay (service.new_relay); `model` is the one that answers."""
    return service.new_relay(settings, encoder, request.max_tokens, model, request.stop)
