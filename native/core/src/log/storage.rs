//! The file-system operations the log performs, behind a trait so tests can make them fail: a
//! failed sync or create must leave the log failed and claiming no durability it lacks, which a
//! real disk will not show on demand (redb's failure-injecting backend, TigerBeetle's storage).

use memmap2::MmapRaw;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

pub trait Storage: Send + Sync {
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Creates a file that must not exist yet, for reading and writing.
    fn create_new(&self, path: &Path) -> io::Result<File>;
    /// Creates or truncates a file, for reading and writing.
    fn create(&self, path: &Path) -> io::Result<File>;
    /// Opens an existing file for reading and writing.
    fn open(&self, path: &Path) -> io::Result<File>;
    /// Opens an existing file for reading only (a read-only open of the log writes nothing).
    fn open_read_only(&self, path: &Path) -> io::Result<File> {
        File::open(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    fn set_len(&self, file: &File, len: u64) -> io::Result<()>;
    /// Gives a new, empty file the length `len` with its blocks reserved (`fallocate`), so that
    /// writes through a mapping of it never find the disk full (a `SIGBUS`) and do not allocate
    /// blocks one page fault at a time. Where the file system cannot reserve, a sparse `set_len`.
    fn allocate(&self, file: &File, len: u64) -> io::Result<()>;
    fn write_at(&self, file: &File, bytes: &[u8], at: u64) -> io::Result<()>;
    /// Makes a file's data (and the metadata needed to read it back) durable.
    fn sync(&self, file: &File) -> io::Result<()>;
    /// Makes a range of a mapped file durable (`msync`).
    fn sync_map(&self, map: &MmapRaw, offset: usize, len: usize) -> io::Result<()>;
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// The names of the entries of a directory.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Makes a directory's entries (created, renamed, removed files) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The operating system's file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealStorage;

impl Storage for RealStorage {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::create_dir_all(path)
    }

    fn create_new(&self, path: &Path) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
    }

    fn create(&self, path: &Path) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
    }

    fn open(&self, path: &Path) -> io::Result<File> {
        OpenOptions::new().read(true).write(true).open(path)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        fs::read(path)
    }

    fn set_len(&self, file: &File, len: u64) -> io::Result<()> {
        file.set_len(len)
    }

    fn allocate(&self, file: &File, len: u64) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::io::AsRawFd;
            let len = libc::off_t::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
            // SAFETY: fallocate reads no memory of ours; the descriptor is open for writing.
            if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) } == 0 {
                return Ok(());
            }
            let error = io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::EOPNOTSUPP) {
                return Err(error);
            }
        }
        file.set_len(len)
    }

    fn write_at(&self, file: &File, bytes: &[u8], at: u64) -> io::Result<()> {
        file.write_all_at(bytes, at)
    }

    fn sync(&self, file: &File) -> io::Result<()> {
        file.sync_data()
    }

    fn sync_map(&self, map: &MmapRaw, offset: usize, len: usize) -> io::Result<()> {
        map.flush_range(offset, len)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        Ok(names)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

/// The real file system with switchable faults: syncs and file creations that fail with `EIO`, and
/// torn writes, which write the first third of their bytes and then fail with `EIO`.
#[derive(Debug, Default)]
pub struct FaultyStorage {
    pub fail_syncs: AtomicBool,
    pub fail_creates: AtomicBool,
    pub tear_writes: AtomicBool,
}

impl FaultyStorage {
    fn check(flag: &AtomicBool) -> io::Result<()> {
        if flag.load(Ordering::SeqCst) {
            Err(io::Error::from_raw_os_error(libc::EIO))
        } else {
            Ok(())
        }
    }
}

impl Storage for FaultyStorage {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        RealStorage.create_dir_all(path)
    }

    fn create_new(&self, path: &Path) -> io::Result<File> {
        Self::check(&self.fail_creates)?;
        RealStorage.create_new(path)
    }

    fn create(&self, path: &Path) -> io::Result<File> {
        Self::check(&self.fail_creates)?;
        RealStorage.create(path)
    }

    fn open(&self, path: &Path) -> io::Result<File> {
        RealStorage.open(path)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        RealStorage.read(path)
    }

    fn set_len(&self, file: &File, len: u64) -> io::Result<()> {
        RealStorage.set_len(file, len)
    }

    fn allocate(&self, file: &File, len: u64) -> io::Result<()> {
        RealStorage.allocate(file, len)
    }

    fn write_at(&self, file: &File, bytes: &[u8], at: u64) -> io::Result<()> {
        if self.tear_writes.load(Ordering::SeqCst) {
            RealStorage.write_at(file, &bytes[..bytes.len() / 3], at)?;
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        RealStorage.write_at(file, bytes, at)
    }

    fn sync(&self, file: &File) -> io::Result<()> {
        Self::check(&self.fail_syncs)?;
        RealStorage.sync(file)
    }

    fn sync_map(&self, map: &MmapRaw, offset: usize, len: usize) -> io::Result<()> {
        Self::check(&self.fail_syncs)?;
        RealStorage.sync_map(map, offset, len)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        RealStorage.rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        RealStorage.remove(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        RealStorage.list(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        Self::check(&self.fail_syncs)?;
        RealStorage.sync_dir(dir)
    }
}
