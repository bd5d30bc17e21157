//! A [`Storage`] whose files live in anonymous memory: a log opened on it is a log "in memory", with
//! the same records, offsets, reads and limits as one on disk, its segments mapped as usual, and
//! nothing on any file system. On Linux each file is a `memfd` (anonymous shared memory, freed when
//! the last descriptor and mapping go: at close, or when the process dies, however it dies);
//! elsewhere a file created in the temporary directory and unlinked at once, which the kernel frees
//! the same way. Paths name entries of a table private to the storage, so no other process can reach
//! the files: a log on it takes no lock, and a sync has nothing to make durable.

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

/// A new empty file in anonymous memory.
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
    let Ok(fd) = i32::try_from(fd) else {
        return Err(io::Error::other("memfd_create returned an invalid descriptor"));
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor is new and owned by nobody else, so the `File` may own it.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// A new empty file in anonymous memory: created in the temporary directory and unlinked at once.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn anonymous_file() -> io::Result<File> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let name = format!(
            "litetopic-memory-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
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
