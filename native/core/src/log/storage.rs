//! The file-system operations the log performs, behind a trait so tests can make them fail: a
//! failed sync or create must leave the log failed and claiming no durability it lacks, which a
//! real disk will not show on demand (redb's failure-injecting backend, TigerBeetle's storage).

use memmap2::MmapRaw;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

pub trait Storage: Send + Sync {
    /// Whether its files are out of every other process's reach (`MemoryStorage`): a log on it
    /// takes no lock on its directory.
    fn private(&self) -> bool {
        false
    }
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

/// What a [`CountingStorage`] does to the call it fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The call fails with `EIO` and changes nothing.
    Fail,
    /// A write stores the first half of its bytes, then fails with `EIO`; any other call fails as
    /// with [`Fault::Fail`].
    Tear,
}

/// The real file system failing one call chosen by its number, whatever its kind, so a test can
/// run a scenario once to count its calls and then again failing each of them in turn. Counted
/// (from 1) are the calls that change files or make them durable: creates, opens, sizing, writes,
/// syncs of files, mappings and directories, renames and removals. Listing and reading are not
/// counted and never fail.
#[derive(Debug)]
pub struct CountingStorage {
    calls: AtomicUsize,
    /// The call to fail; 0 fails none.
    fail_at: usize,
    fault: Fault,
    /// From the failed call on, every counted call fails (a disk that went away), not only that one.
    persistent: bool,
    /// The kind of each counted call, in order, for reporting which call a failing case failed.
    kinds: std::sync::Mutex<Vec<&'static str>>,
}

impl CountingStorage {
    pub fn new(fail_at: usize, fault: Fault, persistent: bool) -> CountingStorage {
        CountingStorage {
            calls: AtomicUsize::new(0),
            fail_at,
            fault,
            persistent,
            kinds: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Counted calls so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// The kind of counted call `n` (from 1), if it was made.
    pub fn kind(&self, n: usize) -> Option<&'static str> {
        let kinds = self
            .kinds
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        n.checked_sub(1).and_then(|i| kinds.get(i).copied())
    }

    /// Counts a call of `kind`; whether it is to fail.
    fn fails(&self, kind: &'static str) -> bool {
        self.kinds
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(kind);
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        self.fail_at != 0 && (n == self.fail_at || (self.persistent && n > self.fail_at))
    }

    fn check(&self, kind: &'static str) -> io::Result<()> {
        if self.fails(kind) {
            Err(io::Error::from_raw_os_error(libc::EIO))
        } else {
            Ok(())
        }
    }
}

impl Storage for CountingStorage {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        RealStorage.create_dir_all(path)
    }

    fn create_new(&self, path: &Path) -> io::Result<File> {
        self.check("create_new")?;
        RealStorage.create_new(path)
    }

    fn create(&self, path: &Path) -> io::Result<File> {
        self.check("create")?;
        RealStorage.create(path)
    }

    fn open(&self, path: &Path) -> io::Result<File> {
        self.check("open")?;
        RealStorage.open(path)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        RealStorage.read(path)
    }

    fn set_len(&self, file: &File, len: u64) -> io::Result<()> {
        self.check("set_len")?;
        RealStorage.set_len(file, len)
    }

    fn write_at(&self, file: &File, bytes: &[u8], at: u64) -> io::Result<()> {
        if !self.fails("write_at") {
            return RealStorage.write_at(file, bytes, at);
        }
        if self.fault == Fault::Tear {
            RealStorage.write_at(file, &bytes[..bytes.len() / 2], at)?;
        }
        Err(io::Error::from_raw_os_error(libc::EIO))
    }

    fn sync(&self, file: &File) -> io::Result<()> {
        self.check("sync")?;
        RealStorage.sync(file)
    }

    fn sync_map(&self, map: &MmapRaw, offset: usize, len: usize) -> io::Result<()> {
        self.check("sync_map")?;
        RealStorage.sync_map(map, offset, len)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.check("rename")?;
        RealStorage.rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.check("remove")?;
        RealStorage.remove(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        RealStorage.list(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.check("sync_dir")?;
        RealStorage.sync_dir(dir)
    }
}
