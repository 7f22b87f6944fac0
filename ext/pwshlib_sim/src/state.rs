//! The simulator's persistent state: a JSON file named by
//! `PWSHLIB_SIM_STATE` (see the "State file" section of the README).
//!
//! Every DSC call locks the file (an exclusive `File::lock` on `<state>.lock`,
//! i.e. `flock` on Unix and `LockFileEx` on Windows, because several hosts
//! may share one state file), reads it, and writes it
//! back atomically (temp file + rename) only when something changed.
//! Without `PWSHLIB_SIM_STATE` the state lives in the process only.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde_json::{json, Map as JsonMap, Value as Json};

pub use crate::comparing::get_ci;
use crate::comparing::values_equal;
use crate::psvalue::eq_ignore_case;

/// State for hosts started without `PWSHLIB_SIM_STATE`.
static PROCESS_STATE: Mutex<Option<Json>> = Mutex::new(None);

enum Backend {
    File {
        path: PathBuf,
        // Held for the life of `State`; closing it releases the lock.
        _lock: File,
    },
    Process(MutexGuard<'static, Option<Json>>),
}

/// The state document, locked for one DSC call.
pub struct State {
    doc: JsonMap<String, Json>,
    dirty: bool,
    backend: Backend,
}

impl State {
    /// Locks and reads the state. `path` None means the process-local state.
    pub fn open(path: Option<&Path>) -> Result<State, String> {
        if let Some(path) = path {
            return Self::open_file(path);
        }
        let guard = PROCESS_STATE
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let doc = match guard.as_ref() {
            Some(Json::Object(map)) => map.clone(),
            _ => JsonMap::new(),
        };
        Ok(State {
            doc,
            dirty: false,
            backend: Backend::Process(guard),
        })
    }

    fn open_file(path: &Path) -> Result<State, String> {
        let mut lock_path = path.as_os_str().to_owned();
        lock_path.push(".lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| {
                format!(
                    "cannot open the state lock file {}: {e}",
                    Path::new(&lock_path).display()
                )
            })?;
        lock.lock()
            .map_err(|e| format!("cannot lock the state file {}: {e}", path.display()))?;
        let doc = match fs::read_to_string(path) {
            Ok(text) if text.trim().is_empty() => JsonMap::new(),
            Ok(text) => match serde_json::from_str::<Json>(&text) {
                Ok(Json::Object(map)) => map,
                Ok(_) => {
                    return Err(format!(
                        "the state file {} must hold a JSON object",
                        path.display()
                    ))
                }
                Err(e) => {
                    return Err(format!(
                        "the state file {} is not valid JSON: {e}",
                        path.display()
                    ))
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => JsonMap::new(),
            Err(e) => {
                return Err(format!(
                    "cannot read the state file {}: {e}",
                    path.display()
                ))
            }
        };
        // A missing file is created on the first call, so that tests can
        // see that the host used it.
        let dirty = !path.exists();
        Ok(State {
            doc,
            dirty,
            backend: Backend::File {
                path: path.to_owned(),
                _lock: lock,
            },
        })
    }

    /// Writes the state back if it changed, then releases the lock.
    pub fn save(self) -> Result<(), String> {
        let State {
            doc,
            dirty,
            backend,
        } = self;
        if !dirty {
            return Ok(());
        }
        match backend {
            Backend::Process(mut guard) => {
                *guard = Some(Json::Object(doc));
                Ok(())
            }
            Backend::File { path, _lock } => write_atomically(&path, &Json::Object(doc)),
        }
    }

    /// The `faults` object, if the state file configures any.
    pub fn faults(&self) -> Option<&JsonMap<String, Json>> {
        self.doc.get("faults").and_then(Json::as_object)
    }

    pub fn counter(&self, name: &str) -> u64 {
        self.doc
            .get("counters")
            .and_then(|c| c.get(name))
            .and_then(Json::as_u64)
            .unwrap_or(0)
    }

    pub fn set_counter(&mut self, name: &str, value: u64) {
        let counters = object_entry(&mut self.doc, "counters");
        counters.insert(name.to_owned(), json!(value));
        self.dirty = true;
    }

    /// The key property names of a resource type: declared in the state
    /// file's `keys` object, or learned from an earlier Get.
    pub fn keys(&self, resource: &str) -> Option<Vec<String>> {
        let keys = self.doc.get("keys")?.as_object()?;
        let (_, names) = keys.iter().find(|(k, _)| eq_ignore_case(k, resource))?;
        let names: Vec<String> = names
            .as_array()?
            .iter()
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect();
        (!names.is_empty()).then_some(names)
    }

    /// Records the key names a Get passed, unless the type already has keys.
    pub fn learn_keys(&mut self, resource: &str, names: &[String]) {
        if names.is_empty() || self.keys(resource).is_some() {
            return;
        }
        let keys = object_entry(&mut self.doc, "keys");
        let stale: Vec<String> = keys
            .keys()
            .filter(|k| eq_ignore_case(k, resource))
            .cloned()
            .collect();
        for k in stale {
            keys.remove(&k);
        }
        keys.insert(resource.to_owned(), json!(names));
        self.dirty = true;
    }

    /// False for types listed in `no_ensure`: their Get results carry no
    /// `Ensure`. Every other type gets one, as the real postscript adds it.
    pub fn has_ensure(&self, resource: &str) -> bool {
        !self.lists("no_ensure", resource)
    }

    /// True for types listed in `get_returns_this`: each plays a
    /// class-based resource whose `Get()` returns the instance it was
    /// called on, the desired values assigned to it and nothing read.
    pub fn returns_this(&self, resource: &str) -> bool {
        self.lists("get_returns_this", resource)
    }

    /// True for types listed in `no_export`: each plays a resource that
    /// cannot list itself (a class without a static `Export()`, a script
    /// module without `Export-TargetResource`).
    pub fn cannot_export(&self, resource: &str) -> bool {
        self.lists("no_export", resource)
    }

    fn lists(&self, list: &str, resource: &str) -> bool {
        self.doc
            .get(list)
            .and_then(Json::as_array)
            .is_some_and(|names| {
                names
                    .iter()
                    .filter_map(Json::as_str)
                    .any(|n| eq_ignore_case(n, resource))
            })
    }

    /// The stored instances of `resource`, in order.
    pub fn instances(&self, resource: &str) -> Option<&Vec<Json>> {
        let resources = self.doc.get("resources")?.as_object()?;
        resources
            .iter()
            .find(|(k, _)| eq_ignore_case(k, resource))?
            .1
            .as_array()
    }

    fn instances_mut(&mut self, resource: &str) -> &mut Vec<Json> {
        let resources = object_entry(&mut self.doc, "resources");
        let name = resources
            .keys()
            .find(|k| eq_ignore_case(k, resource))
            .cloned()
            .unwrap_or_else(|| resource.to_owned());
        let slot = resources.entry(name).or_insert_with(|| json!([]));
        if !slot.is_array() {
            *slot = json!([]);
        }
        match slot {
            Json::Array(items) => items,
            _ => unreachable!("just made an array"),
        }
    }

    /// The stored instance of `resource` whose key properties equal the
    /// given ones (names and string values compared case-insensitively).
    pub fn find(
        &self,
        resource: &str,
        keys: &[String],
        given: &JsonMap<String, Json>,
    ) -> Option<(usize, &JsonMap<String, Json>)> {
        self.instances(resource)?
            .iter()
            .enumerate()
            .filter_map(|(i, item)| item.as_object().map(|o| (i, o)))
            .find(|(_, stored)| {
                keys.iter().all(|key| {
                    let a = get_ci(stored, key).unwrap_or(&Json::Null);
                    let b = get_ci(given, key).unwrap_or(&Json::Null);
                    key_values_equal(a, b)
                })
            })
    }

    pub fn remove(&mut self, resource: &str, index: usize) {
        let items = self.instances_mut(resource);
        if index < items.len() {
            items.remove(index);
        }
        self.dirty = true;
    }

    /// Merges `given` into the instance at `index` (or a new one): a name
    /// already stored keeps its stored spelling, a value takes the casing it
    /// was set with.
    pub fn merge(&mut self, resource: &str, index: Option<usize>, given: &JsonMap<String, Json>) {
        let items = self.instances_mut(resource);
        let target = match index {
            Some(i) if i < items.len() => &mut items[i],
            _ => {
                items.push(json!({}));
                items.last_mut().expect("just pushed")
            }
        };
        if !target.is_object() {
            *target = json!({});
        }
        if let Json::Object(stored) = target {
            for (name, value) in given {
                let existing = stored.keys().find(|k| eq_ignore_case(k, name)).cloned();
                stored.insert(existing.unwrap_or_else(|| name.clone()), value.clone());
            }
        }
        self.dirty = true;
    }
}

fn object_entry<'a>(
    doc: &'a mut JsonMap<String, Json>,
    name: &str,
) -> &'a mut JsonMap<String, Json> {
    let slot = doc.entry(name.to_owned()).or_insert_with(|| json!({}));
    if !slot.is_object() {
        *slot = json!({});
    }
    match slot {
        Json::Object(map) => map,
        _ => unreachable!("just made an object"),
    }
}

/// Key values are strings almost always; compare those without case, and
/// anything else by the loose rules Test uses.
fn key_values_equal(a: &Json, b: &Json) -> bool {
    values_equal(a, b)
}

fn write_atomically(path: &Path, doc: &Json) -> Result<(), String> {
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".tmp.{}", std::process::id()));
    let temp = PathBuf::from(temp);
    let text = serde_json::to_string_pretty(doc).map_err(|e| e.to_string())?;
    let result = File::create(&temp)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.write_all(b"\n")
        })
        .and_then(|()| fs::rename(&temp, path));
    result.map_err(|e| {
        let _ = fs::remove_file(&temp);
        format!("cannot write the state file {}: {e}", path.display())
    })
}
