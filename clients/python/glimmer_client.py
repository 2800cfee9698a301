#!/usr/bin/env python3
"""Pure-Python client for the Glimmer wire protocol (docs/PROTOCOL.md). No dependencies.

Messages are plain dicts: {"type": "Send", "session_id": 1, "role": "User", "content": "Hi"}.
Unit variants are {"type": "Stats"}; fieldless enums (Role, StopReason) are their variant name;
ErrorCode is its int; Option is None or the value; lists are Python lists.

    c = Connection.unix("/run/glimmerd.sock")
    c.send({"type": "Hello", "client": "py", "version": PROTOCOL_VERSION})
    print(c.recv())

`python3 glimmer_client.py --selftest` checks this encoder against the Rust golden fixtures
in tests/fixtures/proto/.
"""

import os
import socket
import struct
import sys

PROTOCOL_VERSION = 1
MAX_FRAME = 64 * 1024
KIND_REQUEST = 1
KIND_RESPONSE = 2


class ProtoError(Exception):
    """Framing or decoding failed; `code` is the wire ErrorCode value."""

    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


# Wire error codes (stable).
ERROR_CODES = {
    1: "BadFrame", 2: "FrameTooLarge", 3: "BadVersion", 4: "Garbage", 5: "Timeout",
    6: "NotYourSession", 7: "UnknownSession", 8: "UnknownTool", 9: "BadToolArgs",
    10: "ActuatorLimit", 11: "ToolTimeout", 12: "ToolFailed", 13: "Busy", 14: "ContextFull",
    15: "PermissionDenied", 16: "ShuttingDown", 17: "Internal", 18: "AlreadyRegistered",
    19: "BadState",
}

# ---- schema: types are 'u8' 'u16' 'u32' 'u64' 'f32' 'bool' 'str', ('opt', T), ('seq', T, cap),
# ('struct', [(field, T)...]), ('enum', [(variant, fields-or-None)...]) for dict-valued enums,
# ('names', [variant...]) for fieldless enums encoded as their variant index.

SAMPLING = ("struct", [("temperature", "f32"), ("top_k", "u32"), ("top_p", "f32"),
                       ("seed", "u64"), ("max_tokens", "u32")])
ROLE = ("names", ["User", "System", "Tool"])
STOP = ("names", ["EndOfTurn", "MaxTokens", "Cancelled", "ContextFull", "ToolLimit", "Error"])
DONE_STATS = ("struct", [("tokens_in", "u32"), ("tokens_out", "u32"), ("prefill_ms", "u32"),
                         ("decode_ms", "u32"), ("tool_calls", "u32"), ("stop_reason", STOP)])
EVENT_KIND = ("enum", [
    ("Token", [("text", "str")]),
    ("ToolCall", [("call_id", "u32"), ("name", "str"), ("args_json", "str")]),
    ("ToolResult", [("call_id", "u32"), ("ok", "bool"), ("content", "str")]),
    ("Done", [("stats", DONE_STATS)]),
])
TOOL_CHOICE = ("names", ["Auto", "Required", "None"])
TOOL_INFO = ("struct", [("name", "str"), ("description", "str"), ("schema_json", "str")])
MAX_TOOLS = 32

REQUEST = ("enum", [
    ("Hello", [("client", "str"), ("version", "u16")]),
    ("OpenSession", [("sampling", SAMPLING), ("system", ("opt", "str")),
                     ("tools", ("opt", ("seq", "str", MAX_TOOLS))),
                     ("constrained_tool_args", "bool")]),
    ("CloseSession", [("session_id", "u64")]),
    ("Send", [("session_id", "u64"), ("role", ROLE), ("content", "str")]),
    ("InvokeTool", [("name", "str"), ("args_json", "str")]),
    ("ListTools", None),
    ("RegisterTool", [("name", "str"), ("description", "str"), ("schema_json", "str")]),
    ("ToolResult", [("call_id", "u32"), ("ok", "bool"), ("content", "str")]),
    ("Stats", None),
    ("Cancel", [("session_id", "u64")]),
    ("SetToolChoice", [("session_id", "u64"), ("choice", TOOL_CHOICE)]),
])

RESPONSE = ("enum", [
    ("HelloOk", [("server", "str"), ("version", "u16"), ("model", "str"), ("board", "str")]),
    ("SessionOpened", [("session_id", "u64")]),
    ("SessionClosed", [("session_id", "u64")]),
    ("Event", [("session_id", "u64"), ("kind", EVENT_KIND)]),
    ("ToolOutput", [("ok", "bool"), ("content", "str")]),
    ("Tools", [("list", ("seq", TOOL_INFO, MAX_TOOLS))]),
    ("Registered", [("name", "str")]),
    ("CallClientTool", [("call_id", "u32"), ("name", "str"), ("args_json", "str")]),
    # A newtype variant: its one field is the struct itself, flattened into the dict.
    ("ServerStats", [("sessions", "u32"), ("max_sessions", "u32"), ("uptime_ms", "u64"),
                     ("tokens_total", "u64"), ("prefill_total", "u64"),
                     ("tool_calls_total", "u64"), ("connections_total", "u64")]),
    ("Error", [("code", "u16"), ("session_id", ("opt", "u64")), ("message", "str")]),
    ("ToolChoiceSet", [("session_id", "u64"), ("choice", TOOL_CHOICE)]),
])

UINT_BITS = {"u16": 16, "u32": 32, "u64": 64}


def _varint(n, out):
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return


def _encode(t, v, out):
    if t == "u8":
        out.append(v)
    elif isinstance(t, str) and t in UINT_BITS:
        if not 0 <= v < (1 << UINT_BITS[t]):
            raise ValueError("%s out of range: %r" % (t, v))
        _varint(v, out)
    elif t == "f32":
        out += struct.pack("<f", v)
    elif t == "bool":
        out.append(1 if v else 0)
    elif t == "str":
        b = v.encode("utf-8")
        _varint(len(b), out)
        out += b
    elif t[0] == "opt":
        if v is None:
            out.append(0)
        else:
            out.append(1)
            _encode(t[1], v, out)
    elif t[0] == "seq":
        if len(v) > t[2]:
            raise ValueError("list longer than %d" % t[2])
        _varint(len(v), out)
        for item in v:
            _encode(t[1], item, out)
    elif t[0] == "struct":
        for name, ft in t[1]:
            _encode(ft, v[name], out)
    elif t[0] == "names":
        _varint(t[1].index(v), out)
    elif t[0] == "enum":
        names = [n for n, _ in t[1]]
        i = names.index(v["type"])
        _varint(i, out)
        for name, ft in t[1][i][1] or []:
            _encode(ft, v[name], out)
    else:
        raise TypeError(t)


class _Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def byte(self):
        if self.pos >= len(self.data):
            raise ProtoError(4, "body ends early")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def take(self, n):
        if self.pos + n > len(self.data):
            raise ProtoError(4, "body ends early")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def varint(self, bits):
        n, shift = 0, 0
        while True:
            b = self.byte()
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
            if shift > bits + 6:
                raise ProtoError(4, "varint too long")
        if n >= (1 << bits):
            raise ProtoError(4, "varint out of range")
        return n


def _decode(t, r):
    if t == "u8":
        return r.byte()
    if isinstance(t, str) and t in UINT_BITS:
        return r.varint(UINT_BITS[t])
    if t == "f32":
        return struct.unpack("<f", r.take(4))[0]
    if t == "bool":
        b = r.byte()
        if b > 1:
            raise ProtoError(4, "bad bool")
        return b == 1
    if t == "str":
        try:
            return r.take(r.varint(64)).decode("utf-8")
        except UnicodeDecodeError:
            raise ProtoError(4, "bad utf-8") from None
    if t[0] == "opt":
        tag = r.byte()
        if tag > 1:
            raise ProtoError(4, "bad option tag")
        return _decode(t[1], r) if tag else None
    if t[0] == "seq":
        n = r.varint(64)
        if n > t[2]:
            raise ProtoError(4, "list too long")
        return [_decode(t[1], r) for _ in range(n)]
    if t[0] == "struct":
        return {name: _decode(ft, r) for name, ft in t[1]}
    if t[0] == "names":
        i = r.varint(32)
        if i >= len(t[1]):
            raise ProtoError(4, "unknown variant")
        return t[1][i]
    if t[0] == "enum":
        i = r.varint(32)
        if i >= len(t[1]):
            raise ProtoError(4, "unknown variant")
        name, fields = t[1][i]
        v = {"type": name}
        for fname, ft in fields or []:
            v[fname] = _decode(ft, r)
        return v
    raise TypeError(t)


def encode_body(schema, msg):
    out = bytearray()
    _encode(schema, msg, out)
    return bytes(out)


def decode_body(schema, body):
    r = _Reader(body)
    v = _decode(schema, r)
    if r.pos != len(body):
        raise ProtoError(4, "trailing bytes")
    return v


def encode_frame(msg, kind=KIND_REQUEST):
    """One frame holding `msg` (a Request dict, or a Response dict with KIND_RESPONSE)."""
    body = encode_body(REQUEST if kind == KIND_REQUEST else RESPONSE, msg)
    n = 2 + len(body)
    if n > MAX_FRAME:
        raise ProtoError(2, "frame of %d bytes exceeds %d" % (n, MAX_FRAME))
    return struct.pack("<IBB", n, PROTOCOL_VERSION, kind) + body


class FrameDecoder:
    """Incremental frame splitter: feed() bytes, then frames() yields (kind, body)."""

    def __init__(self, max_frame=MAX_FRAME):
        self.buf = bytearray()
        self.max_frame = max_frame

    def feed(self, data):
        self.buf += data

    def frames(self):
        while len(self.buf) >= 4:
            (n,) = struct.unpack_from("<I", self.buf)
            if n > self.max_frame:
                raise ProtoError(2, "frame of %d bytes exceeds %d" % (n, self.max_frame))
            if len(self.buf) < 4 + n:
                return
            frame = bytes(self.buf[4:4 + n])
            del self.buf[:4 + n]
            if n < 2:
                raise ProtoError(1, "frame shorter than its header")
            if frame[0] != PROTOCOL_VERSION:
                raise ProtoError(3, "unsupported protocol version %d" % frame[0])
            if frame[1] not in (KIND_REQUEST, KIND_RESPONSE):
                raise ProtoError(1, "unknown frame kind %d" % frame[1])
            yield frame[1], frame[2:]


def decode_frame(kind, body):
    return decode_body(REQUEST if kind == KIND_REQUEST else RESPONSE, body)


class Connection:
    """A client connection over any connected stream socket."""

    def __init__(self, sock):
        self.sock = sock
        self.dec = FrameDecoder()
        self.pending = []

    @classmethod
    def unix(cls, path):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        return cls(s)

    @classmethod
    def tcp(cls, host, port):
        return cls(socket.create_connection((host, port)))

    def send(self, request):
        self.sock.sendall(encode_frame(request, KIND_REQUEST))

    def recv(self):
        """The next Response dict (blocks)."""
        while not self.pending:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("daemon closed the connection")
            self.dec.feed(data)
            for kind, body in self.dec.frames():
                if kind != KIND_RESPONSE:
                    raise ProtoError(1, "request frame from the daemon")
                self.pending.append(decode_body(RESPONSE, body))
        return self.pending.pop(0)


# ---- self-test against the Rust golden fixtures (tests/tests/proto_golden.rs) ----

def _samples():
    ev = lambda kind: {"type": "Event", "session_id": 7, "kind": kind}  # noqa: E731
    led_schema = ('{"type":"object","properties":{"on":{"type":"boolean"}},'
                  '"required":["on"]}')
    req = [
        ("req_hello", {"type": "Hello", "client": "glimmerctl/0.1", "version": 1}),
        ("req_open_session", {
            "type": "OpenSession",
            "sampling": {"temperature": 0.7, "top_k": 40, "top_p": 0.9, "seed": 42,
                         "max_tokens": 256},
            "system": "You are a lamp.", "tools": ["led", "servo"],
            "constrained_tool_args": True}),
        ("req_open_session_defaults", {
            "type": "OpenSession",
            "sampling": {"temperature": 0.0, "top_k": 0, "top_p": 1.0, "seed": 0,
                         "max_tokens": 0},
            "system": None, "tools": None, "constrained_tool_args": False}),
        ("req_close_session", {"type": "CloseSession", "session_id": 7}),
        ("req_send", {"type": "Send", "session_id": 7, "role": "User",
                      "content": "Turn the LED on, s'il vous pla\u00eet \u2713"}),
        ("req_send_tool", {"type": "Send", "session_id": 300, "role": "Tool",
                           "content": '{"t":21.5}'}),
        ("req_invoke_tool", {"type": "InvokeTool", "name": "led", "args_json": '{"on":true}'}),
        ("req_list_tools", {"type": "ListTools"}),
        ("req_register_tool", {
            "type": "RegisterTool", "name": "weather", "description": "Weather at a city.",
            "schema_json": '{"type":"object","properties":{"city":{"type":"string"}}}'}),
        ("req_tool_result", {"type": "ToolResult", "call_id": 5, "ok": True,
                             "content": "21.5 C"}),
        ("req_stats", {"type": "Stats"}),
        ("req_cancel", {"type": "Cancel", "session_id": 1 << 40}),
        ("req_set_tool_choice", {"type": "SetToolChoice", "session_id": 7,
                                 "choice": "Required"}),
    ]
    resp = [
        ("resp_hello_ok", {"type": "HelloOk", "server": "glimmerd/0.1", "version": 1,
                           "model": "smollm2-135m-instruct-q4_1", "board": "sim"}),
        ("resp_session_opened", {"type": "SessionOpened", "session_id": 7}),
        ("resp_session_closed", {"type": "SessionClosed", "session_id": 7}),
        ("resp_event_token", ev({"type": "Token", "text": "Hello"})),
        ("resp_event_tool_call", ev({"type": "ToolCall", "call_id": 1, "name": "led",
                                     "args_json": '{"on":true}'})),
        ("resp_event_tool_result", ev({"type": "ToolResult", "call_id": 1, "ok": False,
                                       "content": "pin busy"})),
        ("resp_event_done", ev({"type": "Done", "stats": {
            "tokens_in": 31, "tokens_out": 200, "prefill_ms": 12, "decode_ms": 4100,
            "tool_calls": 1, "stop_reason": "MaxTokens"}})),
        ("resp_tool_output", {"type": "ToolOutput", "ok": True, "content": "ok"}),
        ("resp_tools", {"type": "Tools", "list": [
            {"name": "led", "description": "Switch the status LED.", "schema_json": led_schema},
            {"name": "uptime", "description": "Seconds since boot.", "schema_json": "{}"}]}),
        ("resp_registered", {"type": "Registered", "name": "weather"}),
        ("resp_call_client_tool", {"type": "CallClientTool", "call_id": 2, "name": "weather",
                                   "args_json": '{"city":"Oslo"}'}),
        ("resp_server_stats", {"type": "ServerStats", "sessions": 2, "max_sessions": 8,
                               "uptime_ms": 3600000, "tokens_total": 5000000000,
                               "prefill_total": 1234, "tool_calls_total": 17,
                               "connections_total": 3}),
        ("resp_error", {"type": "Error", "code": 8, "session_id": 7,
                        "message": "no tool named lamp"}),
        ("resp_error_busy", {"type": "Error", "code": 13, "session_id": None, "message": ""}),
        ("resp_tool_choice_set", {"type": "ToolChoiceSet", "session_id": 7, "choice": "None"}),
    ]
    return [(n, m, KIND_REQUEST) for n, m in req] + [(n, m, KIND_RESPONSE) for n, m in resp]


def _expect_error(code, fn):
    try:
        fn()
    except ProtoError as e:
        assert e.code == code, "expected code %d, got %d (%s)" % (code, e.code, e)
        return
    raise AssertionError("expected ProtoError %d" % code)


def selftest():
    here = os.path.dirname(os.path.abspath(__file__))
    fixtures = os.path.join(here, "..", "..", "tests", "fixtures", "proto")
    samples = _samples()
    stream = bytearray()
    for name, msg, kind in samples:
        with open(os.path.join(fixtures, name + ".bin"), "rb") as f:
            want = f.read()
        got = encode_frame(msg, kind)
        assert got == want, "%s: encoded %s, fixture %s" % (name, got.hex(), want.hex())
        dec = FrameDecoder()
        dec.feed(want)
        [(k, body)] = list(dec.frames())
        back = decode_frame(k, body)
        assert encode_frame(back, k) == want, name
        stream += want
    # The whole stream, fed one byte at a time, gives every message back.
    dec, seen = FrameDecoder(), []
    for b in stream:
        dec.feed(bytes([b]))
        seen += [decode_frame(k, body)["type"] for k, body in dec.frames()]
    assert seen == [m["type"] for _, m, _ in samples], seen
    # Typed rejections.
    big = FrameDecoder()
    big.feed(struct.pack("<I", MAX_FRAME + 1))
    _expect_error(2, lambda: list(big.frames()))
    bad = FrameDecoder()
    bad.feed(b"\x03\x00\x00\x00\x02\x01\x08")
    _expect_error(3, lambda: list(bad.frames()))
    _expect_error(4, lambda: decode_body(REQUEST, b"\x63"))
    _expect_error(4, lambda: decode_body(REQUEST, b"\x08\x00"))
    _expect_error(2, lambda: encode_frame({"type": "InvokeTool", "name": "x",
                                           "args_json": "a" * MAX_FRAME}))
    print("%d fixtures ok" % len(samples))


if __name__ == "__main__":
    if sys.argv[1:] == ["--selftest"]:
        selftest()
    else:
        print(__doc__)
