//! The Python client (`clients/python/glimmer_client.py`) talks to a live `glimmerd`.

mod daemon_common;

use std::path::PathBuf;
use std::process::Command;

use daemon_common::*;

const SCRIPT: &str = r#"
import sys
sys.path.insert(0, sys.argv[1])
from glimmer_client import Connection, PROTOCOL_VERSION
c = Connection.unix(sys.argv[2])
c.send({"type": "Hello", "client": "py-test", "version": PROTOCOL_VERSION})
r = c.recv(); assert r["type"] == "HelloOk", r
c.send({"type": "ListTools"})
r = c.recv(); assert r["type"] == "Tools", r
assert "read_temperature" in [t["name"] for t in r["list"]], r
c.send({"type": "InvokeTool", "name": "read_temperature", "args_json": "{}"})
r = c.recv(); assert r == {"type": "ToolOutput", "ok": True, "content": '{"celsius":21.5}'}, r
c.send({"type": "OpenSession", "sampling": {"temperature": 0.0, "top_k": 0, "top_p": 1.0,
        "seed": 0, "max_tokens": 8}, "system": None, "tools": [], "constrained_tool_args": False})
r = c.recv(); assert r["type"] == "SessionOpened", r
sid = r["session_id"]
c.send({"type": "SetToolChoice", "session_id": sid, "choice": "Auto"})
r = c.recv(); assert r == {"type": "ToolChoiceSet", "session_id": sid, "choice": "Auto"}, r
c.send({"type": "Send", "session_id": sid, "role": "User", "content": "Say hi."})
text = ""
while True:
    r = c.recv()
    assert r["type"] == "Event", r
    k = r["kind"]
    if k["type"] == "Token":
        text += k["text"]
    elif k["type"] == "Done":
        assert k["stats"]["tokens_out"] > 0, k
        break
c.send({"type": "CloseSession", "session_id": sid})
r = c.recv(); assert r == {"type": "SessionClosed", "session_id": sid}, r
print("python ok:", repr(text))
"#;

#[test]
fn python_client_chats_with_the_daemon() {
    let Some(model) = model() else { return };
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIP: python3 not found");
        return;
    }
    let d = start(config(model));
    let clients = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../clients/python");
    let out = Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(&clients)
        .arg(d.socket())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(out.status.success(), "python client failed");
    assert!(stdout.contains("python ok"));
    d.shutdown().unwrap();
}
