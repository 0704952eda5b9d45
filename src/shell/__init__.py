"""The Worker shell: every module that touches JavaScript (bindings, the request body, the
response pipe, plain JS values, the Durable Object's wiring). Nothing outside it imports js,
pyodide or workers."""
