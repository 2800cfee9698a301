//! The listening socket: a private directory, socket permissions, and peer credentials.

use std::fs::{self, DirBuilder, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

use super::DaemonError;

/// Mode of a socket directory the daemon creates.
pub const DIR_MODE: u32 = 0o750;
/// Mode of the socket file.
pub const SOCKET_MODE: u32 = 0o660;

/// The effective uid of this process.
pub fn own_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Binds `path`: creates a missing parent directory with [`DIR_MODE`], removes a stale
/// socket (one nobody answers on), binds, and sets [`SOCKET_MODE`].
pub(crate) fn bind(path: &Path) -> Result<UnixListener, DaemonError> {
    let err = |e| DaemonError::Socket(path.to_path_buf(), e);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            DirBuilder::new()
                .recursive(true)
                .mode(DIR_MODE)
                .create(dir)
                .map_err(err)?;
            // The umask may have cleared bits; set the mode exactly.
            fs::set_permissions(dir, Permissions::from_mode(DIR_MODE)).map_err(err)?;
        }
    }
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(DaemonError::InUse(path.to_path_buf()));
        }
        fs::remove_file(path).map_err(err)?;
    }
    let listener = UnixListener::bind(path).map_err(err)?;
    fs::set_permissions(path, Permissions::from_mode(SOCKET_MODE)).map_err(err)?;
    Ok(listener)
}

/// The peer's `(uid, gid)`, as the kernel recorded them at `connect`.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn peer_cred(stream: &UnixStream) -> io::Result<(u32, u32)> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: the fd is a live socket owned by `stream`; `cred` and `len` point to writable
    // memory of the size passed, which is what SO_PEERCRED fills.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((cred.uid, cred.gid))
}

/// The peer's `(uid, gid)`, as the kernel recorded them at `connect`.
#[cfg(any(
    target_os = "macos",
    target_os = "ios",
    target_os = "freebsd",
    target_os = "openbsd",
    target_os = "netbsd"
))]
pub(crate) fn peer_cred(stream: &UnixStream) -> io::Result<(u32, u32)> {
    let mut uid: libc::uid_t = 0;
    let mut gid: libc::gid_t = 0;
    // SAFETY: the fd is a live socket owned by `stream`; both out-pointers are valid.
    let rc = unsafe { libc::getpeereid(stream.as_raw_fd(), &mut uid, &mut gid) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((uid, gid))
}
