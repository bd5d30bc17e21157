//! A [`Storage`] whose files live in anonymous memory: a log opened on it is a log "in memory", with
//! the same records, offsets, reads and limits as one on disk, its segments mapped as usual. On
//! Linux each file is a `memfd` (anonymous shared memory, on no file system, freed when the last
//! descriptor and mapping go: at close, or when the process dies, however it dies); elsewhere, or
//! where a sandbox refuses `memfd_create`, a file created in the temporary directory and unlinked
//! at once (no name, so nobody else opens it, and the kernel frees it the same way; its pages may
//! be written back to that file system's device under memory pressure). Paths name entries of a
//! table private to the storage, so no other process can reach the files: a log on it takes no
//! lock, and a sync has nothing to make durable.

use super::storage::Storage;
use memmap2::MmapRaw;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// Files in anonymous memory, by path (see the module's comment).
#[derive(Debug, Default)]
pub struct MemoryStorage {
    files: Mutex<HashMap<PathBuf, File>>,
}

impl MemoryStorage {
    pub fn new() -> MemoryStorage {
        MemoryStorage::default()
    }

    /// The table; a panic while it was held leaves it as the panic found it (each change is one
    /// insert or remove, never half made).
    fn files(&self) -> MutexGuard<'_, HashMap<PathBuf, File>> {
        self.files.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn entry(&self, path: &Path) -> io::Result<File> {
        match self.files().get(path) {
            Some(file) => file.try_clone(),
            None => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }
}

/// A new empty file in anonymous memory: a `memfd` where the kernel allows one, else
/// [`unlinked_file`].
#[cfg(any(target_os = "linux", target_os = "android"))]
fn anonymous_file() -> io::Result<File> {
    use std::os::fd::FromRawFd;
    // By system call rather than through the C library: glibc has the wrapper only from 2.27, and
    // the prebuilt binaries run on glibc 2.17 (the kernel has had the call since 3.17).
    // SAFETY: the name is a NUL-terminated string that outlives the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_memfd_create,
            c"litetopic-memory".as_ptr(),
            libc::MFD_CLOEXEC,
        )
    };
    if fd < 0 {
        let error = io::Error::last_os_error();
        // A kernel without the call, or a sandbox that refuses it.
        return match error.raw_os_error() {
            Some(libc::ENOSYS | libc::EPERM | libc::EACCES) => unlinked_file(),
            _ => Err(error),
        };
    }
    let fd = i32::try_from(fd).map_err(|_| io::Error::other("memfd_create gave no descriptor"))?;
    // SAFETY: the descriptor is new and owned by nobody else, so the `File` may own it.
    Ok(unsafe { File::from_raw_fd(fd) })
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn anonymous_file() -> io::Result<File> {
    unlinked_file()
}

/// A new empty file created in the temporary directory and unlinked at once: no other process can
/// open it, and the kernel frees it with its last descriptor and mapping.
fn unlinked_file() -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let name = format!(
            "litetopic-memory-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        // Readable by this user only, for the moment it has a name.
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => {
                std::fs::remove_file(&path)?;
                return Ok(file);
            }
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error),
        }
    }
}

impl Storage for MemoryStorage {
    fn private(&self) -> bool {
        true
    }

    fn create_dir_all(&self, _path: &Path) -> io::Result<()> {
        Ok(())
    }

    fn create_new(&self, path: &Path) -> io::Result<File> {
        let mut files = self.files();
        if files.contains_key(path) {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists));
        }
        let file = anonymous_file()?;
        files.insert(path.to_path_buf(), file.try_clone()?);
        Ok(file)
    }

    fn create(&self, path: &Path) -> io::Result<File> {
        let mut files = self.files();
        let file = anonymous_file()?;
        // A file of that name already open elsewhere keeps its bytes, as an unlinked file would.
        files.insert(path.to_path_buf(), file.try_clone()?);
        Ok(file)
    }

    fn open(&self, path: &Path) -> io::Result<File> {
        self.entry(path)
    }

    fn open_read_only(&self, path: &Path) -> io::Result<File> {
        self.entry(path)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let file = self.entry(path)?;
        let mut bytes = vec![0; file.metadata()?.len() as usize];
        file.read_exact_at(&mut bytes, 0)?;
        Ok(bytes)
    }

    fn set_len(&self, file: &File, len: u64) -> io::Result<()> {
        file.set_len(len)
    }

    fn write_at(&self, file: &File, bytes: &[u8], at: u64) -> io::Result<()> {
        file.write_all_at(bytes, at)
    }

    fn sync(&self, _file: &File) -> io::Result<()> {
        Ok(())
    }

    fn sync_map(&self, _map: &MmapRaw, _offset: usize, _len: usize) -> io::Result<()> {
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut files = self.files();
        let file = files
            .remove(from)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        files.insert(to.to_path_buf(), file);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        match self.files().remove(path) {
            Some(_) => Ok(()),
            None => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        Ok(self
            .files()
            .keys()
            .filter(|path| path.parent() == Some(dir))
            .filter_map(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()))
            .collect())
    }

    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn both_kinds_of_anonymous_file_have_no_name_and_keep_what_is_written() {
        for file in [anonymous_file(), unlinked_file()] {
            let file = file.expect("file");
            assert_eq!(
                file.metadata().expect("metadata").nlink(),
                0,
                "no name in any directory"
            );
            file.set_len(8192).expect("size");
            file.write_all_at(b"kept", 4096).expect("write");
            let mut back = [0; 4];
            file.read_exact_at(&mut back, 4096).expect("read");
            assert_eq!(&back, b"kept");
        }
    }
}
