//! helmfile's template functions: sprig (with `env` and `expandenv`, which Helm drops) and
//! helmfile's own, each bounded: environment variables from an explicit set, files inside the
//! repository, no program run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use fluxgate_fs::{Fs, normalize};
use fluxgate_gotemplate::{Arity, FuncError, Funcs, Trace, Value};
use fluxgate_helm::sprig::{self, arg_str, strval};

/// What the renderers share: the files, the environment set and the log of what was not
/// evaluated.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub fs: Arc<dyn Fs>,
    pub root: PathBuf,
    pub env: Arc<BTreeMap<String, String>>,
    pub log: Arc<Mutex<Log>>,
}

/// What renders recorded.
#[derive(Default)]
pub(crate) struct Log {
    /// What was not evaluated, as a sentence each.
    pub unevaluated: Vec<String>,
    /// The files `readFile` read (relative to the repository), in order.
    pub reads: Vec<String>,
}

impl Ctx {
    pub fn note(&self, what: String) {
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if !log.unevaluated.contains(&what) {
            log.unevaluated.push(what);
        }
    }

    /// Takes the log recorded so far.
    pub fn take(&self) -> Log {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// `path` (relative to `base`, or absolute) inside the repository, or why not.
    pub fn inside(&self, base: &Path, path: &str) -> Result<PathBuf, String> {
        let joined = normalize(&base.join(path));
        if joined.starts_with(&self.root) && self.fs.confines(&joined) {
            Ok(joined)
        } else {
            Err(format!(
                "{path} is outside the repository: fluxgate reads only the repository"
            ))
        }
    }

    pub fn rel(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/")
    }
}

/// The marker of an error that is a limit of fluxgate's, not of the template: the render is
/// reported as not evaluated rather than as the template's defect.
pub(crate) const LIMIT: &str = "fluxgate does not evaluate";

/// The function table for a template whose `readFile` reads relative to `base`. `pre_render`
/// is helmfile's first pass: `readFile`, `readDir` and `exec` return nothing.
pub(crate) fn funcs(ctx: &Ctx, base: &Path, pre_render: bool) -> Funcs {
    let mut f = sprig::shared();
    sprig::crypto::add_seeded(&mut f, 0);
    // helmfile's `get` is a path lookup; sprig's is kept as `sprigGet`.
    if let Some(g) = f.get("get").cloned() {
        f.insert_func("sprigGet", g);
    }
    f.insert("get", Arity::AtLeast(2), |_, a| get_path(a, false));
    f.set_params("get", &[]);
    f.insert("getOrNil", Arity::Exact(2), |_, a| get_path(a, true));
    f.insert("toYaml", Arity::Exact(1), |_, a| {
        let mut s = fluxgate_helm::convert::to_yaml(&a[0]);
        s.push('\n');
        Ok(Value::from(s))
    });
    f.set_trace("toYaml", Trace::Last);
    f.insert("fromYaml", Arity::Exact(1), |_, a| {
        let text = arg_str(a, 0)?;
        sprig::parse_yaml(&text).map_err(|e| FuncError(format!("{}, offending yaml: {text}", e.0)))
    });
    f.insert("required", Arity::Exact(2), |_, a| match &a[1] {
        Value::Nil | Value::Missing => Err(FuncError(strval(&a[0]))),
        Value::String(s) if s.is_empty() => Err(FuncError(strval(&a[0]))),
        v => Ok(v.clone()),
    });
    f.insert("tpl", Arity::Exact(2), |c, a| {
        let text = arg_str(a, 0)?;
        c.execute_text("stringTemplate", &text, &a[1])
            .map(Value::from)
    });
    f.set_trace("tpl", Trace::Tpl);
    f.insert("include", Arity::Exact(2), |c, a| {
        let name = arg_str(a, 0)?;
        c.execute_template(&name, &a[1]).map(Value::from)
    });
    f.set_trace("include", Trace::Include);
    f.insert("setValueAtPath", Arity::Exact(3), |_, a| {
        let path = arg_str(a, 0)?;
        let Value::Map(root) = &a[2] else {
            return Err("setValueAtPath: the third argument must be a map".into());
        };
        let keys: Vec<&str> = path.split('.').collect();
        let mut cur = root.clone();
        for (i, k) in keys.iter().enumerate() {
            if i + 1 == keys.len() {
                cur.borrow_mut().insert((*k).to_string(), a[1].clone());
                break;
            }
            let next = cur.borrow().get(*k).cloned();
            let Some(Value::Map(next)) = next else {
                return Err(format!("failed to set value at path \"{path}\"").into());
            };
            cur = next;
        }
        Ok(a[2].clone())
    });

    let env = ctx.env.clone();
    f.insert("env", Arity::Exact(1), move |_, a| {
        let name = arg_str(a, 0)?;
        Ok(Value::from(env.get(&name).cloned().unwrap_or_default()))
    });
    let env = ctx.env.clone();
    let c = ctx.clone();
    f.insert("requiredEnv", Arity::Exact(1), move |_, a| {
        let name = arg_str(a, 0)?;
        if let Some(v) = env.get(&name).filter(|v| !v.is_empty()) {
            return Ok(Value::from(v.clone()));
        }
        c.note(format!(
            "requiredEnv \"{name}\": the variable is not in the helmfile's `env:` set"
        ));
        Err(FuncError(format!(
            "required env var `{name}` is not set ({LIMIT} the caller's environment)"
        )))
    });
    let env = ctx.env.clone();
    f.insert("expandenv", Arity::Exact(1), move |_, a| {
        Ok(Value::from(expand(&arg_str(a, 0)?, &env)))
    });

    for name in ["exec", "envExec"] {
        let c = ctx.clone();
        f.insert(name, Arity::AtLeast(2), move |_, a| {
            if !pre_render {
                let (cmd, args) = if name == "envExec" {
                    (a.get(1), a.get(2))
                } else {
                    (a.first(), a.get(1))
                };
                let mut line = cmd.map(strval).unwrap_or_default();
                if let Some(Value::List(l)) = args {
                    for x in l.borrow().iter() {
                        line.push(' ');
                        line.push_str(&strval(x));
                    }
                }
                c.note(format!(
                    "{name} `{line}` was not run (fluxgate runs no program)"
                ));
            }
            Ok(Value::from(""))
        });
    }
    for name in ["fetchSecretValue", "expandSecretRefs"] {
        let c = ctx.clone();
        f.insert(name, Arity::Exact(1), move |_, a| {
            if !pre_render {
                c.note(format!(
                    "{name} was not evaluated (a secret reference is never read)"
                ));
            }
            Ok(a[0].clone())
        });
    }
    let c = ctx.clone();
    f.insert("getHostByName", Arity::Exact(1), move |_, a| {
        c.note(format!(
            "getHostByName \"{}\" was not resolved (no network)",
            strval(&a[0])
        ));
        Ok(Value::from(""))
    });

    let (c, b) = (ctx.clone(), base.to_path_buf());
    f.insert("readFile", Arity::Exact(1), move |_, a| {
        let name = arg_str(a, 0)?;
        if pre_render {
            return Ok(Value::from(""));
        }
        let path = c.inside(&b, &name).map_err(|e| {
            c.note(format!("readFile \"{name}\": {e}"));
            FuncError(format!("readFile: {e} ({LIMIT} it)"))
        })?;
        let text = c.fs.read(&path).map_err(|_| {
            FuncError(format!(
                "open {}: no such file or directory",
                path.display()
            ))
        })?;
        c.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .reads
            .push(c.rel(&path));
        Ok(Value::from(text))
    });
    for (name, want_dir) in [("isFile", false), ("isDir", true)] {
        let (c, b) = (ctx.clone(), base.to_path_buf());
        f.insert(name, Arity::Exact(1), move |_, a| {
            let p = arg_str(a, 0)?;
            let path = c.inside(&b, &p).map_err(|e| {
                c.note(format!("{name} \"{p}\": {e}"));
                FuncError(format!("{name}: {e} ({LIMIT} it)"))
            })?;
            Ok(Value::Bool(if want_dir {
                c.fs.is_dir(&path)
            } else {
                c.fs.is_file(&path)
            }))
        });
    }
    for (name, entries) in [("readDir", false), ("readDirEntries", true)] {
        let (c, b) = (ctx.clone(), base.to_path_buf());
        f.insert(name, Arity::Exact(1), move |_, a| {
            if pre_render {
                return Ok(Value::list(Vec::new()));
            }
            let p = arg_str(a, 0)?;
            let path = c.inside(&b, &p).map_err(|e| {
                c.note(format!("{name} \"{p}\": {e}"));
                FuncError(format!("{name}: {e} ({LIMIT} it)"))
            })?;
            let mut list =
                c.fs.list_dir_kinds(&path)
                    .map_err(|e| FuncError(format!("ReadDir {:?}: {e}", path.display())))?;
            list.sort();
            Ok(Value::list(
                list.into_iter()
                    .filter(|(_, dir)| entries || !dir)
                    .map(|(x, dir)| {
                        let file = x.file_name().map(|n| n.to_string_lossy().to_string());
                        if entries {
                            Value::map(BTreeMap::from([
                                ("Name".to_string(), Value::from(file.unwrap_or_default())),
                                ("IsDir".to_string(), Value::Bool(dir)),
                            ]))
                        } else {
                            Value::from(c.rel(&x))
                        }
                    })
                    .collect(),
            ))
        });
    }
    f
}

/// helmfile's `get PATH [DEFAULT] OBJ` and `getOrNil PATH OBJ`: a dotted path into maps.
fn get_path(a: &[Value], or_nil: bool) -> Result<Value, FuncError> {
    let path = arg_str(a, 0)?;
    let (default, obj) = match a.len() {
        2 => (None, &a[1]),
        _ => (Some(&a[1]), &a[a.len() - 1]),
    };
    let mut cur = obj.clone();
    for key in path.split('.').filter(|k| !k.is_empty()) {
        let next = match &cur {
            Value::Map(m) => m.borrow().get(key).cloned(),
            _ => None,
        };
        match next {
            Some(v) => cur = v,
            None if or_nil => return Ok(Value::Nil),
            None => {
                return default
                    .cloned()
                    .ok_or_else(|| FuncError(format!("no value exists at path \"{path}\"")));
            }
        }
    }
    Ok(cur)
}

/// Go's `os.ExpandEnv` over the explicit set: `$NAME` and `${NAME}`, unknown names empty.
fn expand(s: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() {
            let (name, next) = if b[i + 1] == b'{' {
                match s[i + 2..].find('}') {
                    Some(end) => (&s[i + 2..i + 2 + end], i + 3 + end),
                    None => ("", i + 1),
                }
            } else {
                let len = s[i + 1..]
                    .bytes()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
                    .count();
                (&s[i + 1..i + 1 + len], i + 1 + len)
            };
            if next > i + 1 {
                out.push_str(env.get(name).map_or("", String::as_str));
                i = next;
                continue;
            }
        }
        let ch = s[i..].chars().next().unwrap_or('$');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expandenv_reads_only_the_set() {
        let env = BTreeMap::from([("A".to_string(), "1".to_string())]);
        assert_eq!(expand("x$A-${A}-$HOME.", &env), "x1-1-.");
    }

    #[test]
    fn get_walks_a_path_with_a_default() {
        let m = Value::map(BTreeMap::from([(
            "a".to_string(),
            Value::map(BTreeMap::from([("b".to_string(), Value::Int(1))])),
        )]));
        let p = |s: &str| Value::from(s);
        assert_eq!(
            get_path(&[p("a.b"), m.clone()], false).unwrap(),
            Value::Int(1)
        );
        assert_eq!(
            get_path(&[p("a.c"), p("d"), m.clone()], false).unwrap(),
            p("d")
        );
        assert!(get_path(&[p("a.c"), m.clone()], false).is_err());
        assert_eq!(get_path(&[p("a.c"), m], true).unwrap(), Value::Nil);
    }
}
