//! [`Outbox`]: a connection's queue of outgoing frames, drained by its own writer thread,
//! so that a client that stops reading never blocks the engine.

use std::io::Write;
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Arc;

use glimmer_core::proto::{encode_frame, ErrorCode, Response, LEN_PREFIX, MAX_FRAME};

/// Sends frames to one client. Cheap to clone; the writer thread ends when every clone is gone.
#[derive(Clone)]
pub(crate) struct Outbox {
    tx: SyncSender<Vec<u8>>,
    stream: Arc<UnixStream>,
    dead: Arc<AtomicBool>,
}

impl Outbox {
    /// Starts the writer thread for `stream`, queueing at most `cap` frames.
    pub fn spawn(stream: UnixStream, cap: usize) -> std::io::Result<Outbox> {
        let (tx, rx) = sync_channel::<Vec<u8>>(cap.max(1));
        let stream = Arc::new(stream);
        let dead = Arc::new(AtomicBool::new(false));
        let (w, d) = (Arc::clone(&stream), Arc::clone(&dead));
        std::thread::Builder::new()
            .name("glimmerd-writer".into())
            .spawn(move || {
                for frame in rx {
                    if (&*w).write_all(&frame).is_err() {
                        d.store(true, Ordering::Relaxed);
                        w.shutdown(Shutdown::Both).ok();
                        return;
                    }
                }
                w.shutdown(Shutdown::Write).ok();
            })?;
        Ok(Outbox { tx, stream, dead })
    }

    /// Queues `msg`. Returns false when the client is gone or does not keep up (it is then
    /// disconnected).
    pub fn send(&self, msg: &Response<'_>) -> bool {
        if self.dead.load(Ordering::Relaxed) {
            return false;
        }
        // Most frames are small: try a short buffer before the largest one.
        let mut buf = vec![0u8; 512];
        let mut res = encode_frame(msg, &mut buf);
        if res.is_err() {
            buf = vec![0u8; LEN_PREFIX + MAX_FRAME];
            res = encode_frame(msg, &mut buf);
        }
        let n = match res {
            Ok(n) => n,
            Err(e) => {
                log::error!("cannot encode a response: {e}");
                return false;
            }
        };
        buf.truncate(n);
        match self.tx.try_send(buf) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                log::warn!("client does not read its frames; disconnecting it");
                self.kill();
                false
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// Queues an error frame.
    pub fn error(&self, code: ErrorCode, session_id: Option<u64>, message: &str) -> bool {
        self.send(&Response::Error {
            code,
            session_id,
            message,
        })
    }

    /// Disconnects the client now.
    pub fn kill(&self) {
        self.dead.store(true, Ordering::Relaxed);
        self.stream.shutdown(Shutdown::Both).ok();
    }

    /// Whether the client is gone.
    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Relaxed)
    }
}
