//! The power-loss model of power.rs: a storage that records what each call made durable, and
//! what a power loss at a chosen call leaves on disk.
//!
//! What the model keeps, as the native engine uses the disk: appends are positional writes into
//! the page cache (`write_at`), made durable by `msync` of the written range of the segment's
//! mapping (`sync_map`, which on Linux syncs that range of the file and the size it needs) or by
//! `fdatasync` of the whole file (`sync`). A file created, renamed or removed is durable in its
//! directory only once that directory is synced. Directories themselves are taken as durable.

use super::faults::sweep_dir;
use super::*;
use memmap2::MmapRaw;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::sync::Mutex;

type FileId = usize;

/// A change to a file's bytes not yet known to be durable.
#[derive(Clone, Debug)]
enum Change {
    Write { file: FileId, at: u64, bytes: Vec<u8> },
    SetLen { file: FileId, len: u64 },
}

/// A change to a directory's entries not yet known to be durable.
#[derive(Clone, Debug)]
enum Entry {
    Create {
        path: PathBuf,
        file: FileId,
    },
    Rename {
        from: PathBuf,
        to: PathBuf,
        file: FileId,
    },
    Remove {
        path: PathBuf,
    },
}

impl Entry {
    fn dir(&self) -> Option<&Path> {
        match self {
            Entry::Create { path, .. } | Entry::Remove { path } => path.parent(),
            Entry::Rename { to, .. } => to.parent(),
        }
    }

    fn apply(&self, names: &mut HashMap<PathBuf, FileId>) {
        match self {
            Entry::Create { path, file } => {
                names.insert(path.clone(), *file);
            }
            Entry::Rename { from, to, file } => {
                names.remove(from);
                names.insert(to.clone(), *file);
            }
            Entry::Remove { path } => {
                names.remove(path);
            }
        }
    }
}

/// What is durable, and what is not yet, at one moment.
#[derive(Clone, Debug, Default)]
pub struct Disk {
    /// The durable bytes of each file ever created or opened.
    durable: Vec<Vec<u8>>,
    /// Live files by inode.
    by_inode: HashMap<u64, FileId>,
    /// Durable directory entries.
    names: HashMap<PathBuf, FileId>,
    /// Directory entries as the file system shows them now.
    current: HashMap<PathBuf, FileId>,
    /// Directory changes since their directory's last sync, in order.
    entries: Vec<Entry>,
    /// File changes not yet synced, in order.
    changes: Vec<Change>,
}

/// How much of what was not durable a power loss leaves.
#[derive(Clone, Copy, Debug)]
pub struct Loss {
    /// Directory changes kept, from the first (`usize::MAX`: all).
    pub entries: usize,
    /// File changes kept, from the first; the one after them is kept in part (half its bytes).
    changes: usize,
    torn: bool,
}

pub const LOSSES: [Loss; 7] = [
    // Nothing that was not synced survives.
    Loss {
        entries: 0,
        changes: 0,
        torn: false,
    },
    // The directory entries reached the disk, no unsynced data did.
    Loss {
        entries: usize::MAX,
        changes: 0,
        torn: false,
    },
    // All unsynced data reached the disk but no unsynced entry.
    Loss {
        entries: 0,
        changes: usize::MAX,
        torn: false,
    },
    // Only the first one or two unsynced directory changes reached the disk (a journal commits
    // them in order), no unsynced data.
    Loss {
        entries: 1,
        changes: 0,
        torn: false,
    },
    Loss {
        entries: 2,
        changes: 0,
        torn: false,
    },
    // Everything reached the disk (as a process crash leaves it).
    Loss {
        entries: usize::MAX,
        changes: usize::MAX,
        torn: false,
    },
    // The entries, and the first half of the unsynced writes with the next one torn.
    Loss {
        entries: usize::MAX,
        changes: 0,
        torn: true,
    },
];

impl Disk {
    fn add_file(&mut self, inode: u64, bytes: Vec<u8>) -> FileId {
        self.durable.push(bytes);
        let id = self.durable.len() - 1;
        self.by_inode.insert(inode, id);
        id
    }

    fn push_entry(&mut self, entry: Entry) {
        entry.apply(&mut self.current);
        self.entries.push(entry);
    }

    /// The files a power loss of kind `loss` leaves: path and bytes.
    pub fn after(&self, loss: Loss) -> Vec<(PathBuf, Vec<u8>)> {
        let mut names = self.names.clone();
        for entry in self.entries.iter().take(loss.entries) {
            entry.apply(&mut names);
        }
        let mut files = self.durable.clone();
        let kept = if loss.torn {
            self.changes.len() / 2
        } else {
            loss.changes.min(self.changes.len())
        };
        let mut apply = |change: &Change, part: bool| match change {
            Change::Write { file, at, bytes } => {
                let bytes = if part {
                    &bytes[..bytes.len() / 2]
                } else {
                    &bytes[..]
                };
                let end = *at as usize + bytes.len();
                let data = &mut files[*file];
                if data.len() < end {
                    data.resize(end, 0);
                }
                data[*at as usize..end].copy_from_slice(bytes);
            }
            Change::SetLen { file, len } => files[*file].resize(*len as usize, 0),
        };
        for change in &self.changes[..kept] {
            apply(change, false);
        }
        if loss.torn {
            if let Some(change) = self.changes.get(kept) {
                apply(change, true);
            }
        }
        names
            .into_iter()
            .map(|(path, file)| (path, files[file].clone()))
            .collect()
    }
}

/// Real storage that keeps a [`Disk`] model of what it made durable, and at call `crash_at`
/// (counted as `CountingStorage` counts) takes a copy of the model and fails that call and every
/// later one, as a machine that lost power would.
pub struct PowerStorage {
    crash_at: usize,
    /// The log directory, whose files at the first call are taken as durable.
    dir: PathBuf,
    state: Mutex<(usize, Disk, Option<Disk>)>,
}

fn inode(file: &File) -> io::Result<u64> {
    Ok(file.metadata()?.ino())
}

/// The inode of the file mapped at `address`, from /proc/self/maps.
fn mapped_inode(address: usize) -> io::Result<u64> {
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(inode)) = (fields.next(), fields.nth(3)) else {
            continue;
        };
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16)) else {
            continue;
        };
        if (start..end).contains(&address) {
            return inode
                .parse()
                .map_err(|_| io::Error::other("bad inode in /proc/self/maps"));
        }
    }
    Err(io::Error::other("address not mapped"))
}

/// Takes the files under `dir` (the log directory and its segment directory) as durable.
fn adopt(disk: &mut Disk, dir: &Path) {
    for dir in [dir.to_path_buf(), dir.join("segments")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(file) = File::open(&path) else {
                continue;
            };
            if !file.metadata().is_ok_and(|m| m.is_file()) {
                continue;
            }
            let id = disk.add_file(inode(&file).expect("inode"), whole_file(&file).expect("read"));
            disk.names.insert(path.clone(), id);
            disk.current.insert(path, id);
        }
    }
}

fn whole_file(file: &File) -> io::Result<Vec<u8>> {
    let mut bytes = vec![0; file.metadata()?.len() as usize];
    file.read_exact_at(&mut bytes, 0)?;
    Ok(bytes)
}

impl PowerStorage {
    pub fn new(crash_at: usize, dir: &Path) -> PowerStorage {
        PowerStorage {
            crash_at,
            dir: dir.to_path_buf(),
            state: Mutex::new((0, Disk::default(), None)),
        }
    }

    /// Counts a call; fails it once the power is gone. Otherwise runs `call` and updates the model.
    fn call<T>(
        &self,
        call: impl FnOnce() -> io::Result<T>,
        model: impl FnOnce(&mut Disk, &T),
    ) -> io::Result<T> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if state.0 == 0 {
            adopt(&mut state.1, &self.dir);
        }
        state.0 += 1;
        if state.0 == self.crash_at {
            state.2 = Some(state.1.clone());
        }
        if state.2.is_some() {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        let result = call()?;
        model(&mut state.1, &result);
        Ok(result)
    }

    pub fn calls(&self) -> usize {
        self.state.lock().expect("state").0
    }

    /// The model as the power loss found it.
    pub fn crashed(&self) -> Option<Disk> {
        self.state.lock().expect("state").2.clone()
    }

    /// Models a file `path` that `create` made (a new, empty file whose entry is not durable yet).
    fn created(disk: &mut Disk, path: &Path, file: &File) {
        let id = disk.add_file(inode(file).expect("inode"), Vec::new());
        disk.push_entry(Entry::Create {
            path: path.to_path_buf(),
            file: id,
        });
    }

    fn id(disk: &Disk, file: &File) -> FileId {
        let inode = inode(file).expect("inode");
        *disk.by_inode.get(&inode).expect("a file the model knows")
    }
}

impl Storage for PowerStorage {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        RealStorage.create_dir_all(path)
    }

    fn create_new(&self, path: &Path) -> io::Result<File> {
        self.call(
            || RealStorage.create_new(path),
            |disk, file| Self::created(disk, path, file),
        )
    }

    fn create(&self, path: &Path) -> io::Result<File> {
        self.call(
            || RealStorage.create(path),
            |disk, file| Self::created(disk, path, file),
        )
    }

    fn open(&self, path: &Path) -> io::Result<File> {
        self.call(
            || RealStorage.open(path),
            |disk, file| {
                let inode = inode(file).expect("inode");
                if !disk.by_inode.contains_key(&inode) {
                    // A file from before the model started: durable as it is.
                    let id = disk.add_file(inode, whole_file(file).expect("read"));
                    disk.names.insert(path.to_path_buf(), id);
                    disk.current.insert(path.to_path_buf(), id);
                }
            },
        )
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        RealStorage.read(path)
    }

    fn set_len(&self, file: &File, len: u64) -> io::Result<()> {
        self.call(
            || RealStorage.set_len(file, len),
            |disk, ()| {
                let id = Self::id(disk, file);
                disk.changes.push(Change::SetLen { file: id, len });
            },
        )
    }

    fn write_at(&self, file: &File, bytes: &[u8], at: u64) -> io::Result<()> {
        self.call(
            || RealStorage.write_at(file, bytes, at),
            |disk, ()| {
                let id = Self::id(disk, file);
                disk.changes.push(Change::Write {
                    file: id,
                    at,
                    bytes: bytes.to_vec(),
                });
            },
        )
    }

    fn sync(&self, file: &File) -> io::Result<()> {
        self.call(
            || RealStorage.sync(file),
            |disk, ()| {
                let id = Self::id(disk, file);
                disk.durable[id] = whole_file(file).expect("read");
                disk.changes.retain(|change| match change {
                    Change::Write { file, .. } | Change::SetLen { file, .. } => *file != id,
                });
            },
        )
    }

    fn sync_map(&self, map: &MmapRaw, offset: usize, len: usize) -> io::Result<()> {
        self.call(
            || RealStorage.sync_map(map, offset, len),
            |disk, ()| {
                let inode = mapped_inode(map.as_ptr() as usize).expect("mapped file");
                let id = *disk.by_inode.get(&inode).expect("a file the model knows");
                // msync works on whole pages; the file's size becomes durable with them.
                const PAGE: usize = 4096;
                let start = offset / PAGE * PAGE;
                let end = (offset + len).div_ceil(PAGE) * PAGE;
                let end = end.min(map.len());
                // SAFETY: `start` is inside the mapping (`end <= map.len()`).
                let first = unsafe { map.as_ptr().add(start) };
                // SAFETY: `first..first + (end - start)` is inside the mapping, which the caller
                // keeps alive and nothing writes during the sync.
                let now = unsafe { std::slice::from_raw_parts(first, end - start) };
                let durable = &mut disk.durable[id];
                durable.resize(map.len(), 0);
                durable[start..end].copy_from_slice(now);
                disk.changes.retain(|change| match change {
                    Change::Write { file, at, bytes } => {
                        *file != id || (*at as usize) < start || *at as usize + bytes.len() > end
                    }
                    Change::SetLen { file, .. } => *file != id,
                });
            },
        )
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.call(
            || RealStorage.rename(from, to),
            |disk, ()| {
                let file = *disk.current.get(from).expect("a file the model knows");
                disk.push_entry(Entry::Rename {
                    from: from.to_path_buf(),
                    to: to.to_path_buf(),
                    file,
                });
            },
        )
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.call(
            || RealStorage.remove(path),
            |disk, ()| {
                disk.push_entry(Entry::Remove {
                    path: path.to_path_buf(),
                })
            },
        )
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        RealStorage.list(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.call(
            || RealStorage.sync_dir(dir),
            |disk, ()| {
                let (synced, rest): (Vec<Entry>, Vec<Entry>) = std::mem::take(&mut disk.entries)
                    .into_iter()
                    .partition(|e| e.dir() == Some(dir));
                for entry in &synced {
                    entry.apply(&mut disk.names);
                }
                disk.entries = rest;
            },
        )
    }
}

/// Writes the files a power loss left into a fresh directory laid out like `original`.
pub fn materialize(original: &Path, files: &[(PathBuf, Vec<u8>)]) -> TempDir {
    let dir = sweep_dir();
    std::fs::create_dir_all(dir.0.join("segments")).expect("mkdir");
    for (path, bytes) in files {
        let relative = path.strip_prefix(original).expect("inside the log directory");
        std::fs::write(dir.0.join(relative), bytes).expect("write");
    }
    dir
}

impl PowerStorage {
    /// Cuts the power now: the model as it is, and every later call fails.
    pub fn cut_power(&self) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let disk = state.1.clone();
        state.2 = Some(disk);
    }
}
