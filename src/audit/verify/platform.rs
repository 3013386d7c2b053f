//! `verify --shard auto`: the shard a task of a batch platform is, read from the variables
//! the platform sets in every task's environment.
//!
//! | platform | index | count |
//! |---|---|---|
//! | AWS Batch array job | `AWS_BATCH_JOB_ARRAY_INDEX` | `--shards N` (the array size; Batch does not set it) |
//! | Kubernetes Indexed Job | `JOB_COMPLETION_INDEX` | `--shards N` (`.spec.completions`) |
//! | Cloud Run job | `CLOUD_RUN_TASK_INDEX` | `CLOUD_RUN_TASK_COUNT` (and `--shards N`, if given, must agree) |
//!
//! Guarantees: a task never guesses. With no index variable set, with two index variables
//! that disagree, with a count from two places that disagree, with no count at all, or with
//! an index that is not below the count, [`ShardRequest::resolve`] refuses with a usage
//! error that names each variable and its value; a value that is not a whole number is
//! refused, not read as 0. A variable set to the empty string counts as unset (a shell's
//! `export VAR=`), so an empty variable cannot pass for index 0.

use std::fmt;

use crate::audit::verify::options::ShardSpec;
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};

/// The index variables, with the platform that sets each.
pub const INDEX_VARS: [(&str, &str); 3] = [
    ("AWS_BATCH_JOB_ARRAY_INDEX", "AWS Batch array job"),
    ("JOB_COMPLETION_INDEX", "Kubernetes Indexed Job"),
    ("CLOUD_RUN_TASK_INDEX", "Cloud Run job"),
];

/// The count variable (Cloud Run's; the other platforms set none).
pub const COUNT_VAR: &str = "CLOUD_RUN_TASK_COUNT";

/// What `--shard` asks for: a fixed `I/N`, or `auto` (from the platform's environment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardRequest {
    /// `--shard I/N`.
    Fixed(ShardSpec),
    /// `--shard auto`.
    Auto,
}

impl std::str::FromStr for ShardRequest {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        if s.trim().eq_ignore_ascii_case("auto") {
            return Ok(Self::Auto);
        }
        s.parse::<ShardSpec>()
            .map(Self::Fixed)
            .map_err(|_| Error::invalid(Param::Shard, text![format!("{s:?}: expected I/N with 0 <= I < N (e.g. 0/4), or `auto` (the index from AWS_BATCH_JOB_ARRAY_INDEX, JOB_COMPLETION_INDEX or CLOUD_RUN_TASK_INDEX)")]))
    }
}

/// A resolved shard and where it came from, for the report's readers and the logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedShard {
    /// The shard.
    pub spec: ShardSpec,
    /// Where index and count came from, e.g. `AWS_BATCH_JOB_ARRAY_INDEX=3, --shards 8`.
    pub source: String,
}

impl fmt::Display for ResolvedShard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "shard {}/{} ({})",
            self.spec.index, self.spec.count, self.source
        )
    }
}

/// A variable's value, where it is set and not empty.
fn var(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    env(name).filter(|v| !v.trim().is_empty())
}

fn whole(name: &str, value: &str) -> Result<u32> {
    value.trim().parse::<u32>().map_err(|_| {
        Error::invalid(
            Param::Shard,
            text![format!(
                "auto: {name}={value:?} is not a whole number from 0 to {}",
                u32::MAX
            )],
        )
    })
}

impl ShardRequest {
    /// The shard to check. `shards` is `--shards N`; `env` reads a variable (the process
    /// environment in the CLI: `|k| std::env::var(k).ok()`).
    pub fn resolve(
        self,
        shards: Option<u32>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ResolvedShard> {
        if shards == Some(0) {
            return Err(Error::invalid(Param::Shards, text!["0: give at least 1"]));
        }
        let spec = match self {
            Self::Fixed(spec) => {
                if let Some(n) = shards.filter(|n| *n != spec.count) {
                    return Err(Error::invalid(
                        Param::Shard,
                        text![
                            format!("{}/{} and ", spec.index, spec.count),
                            Param::Shards,
                            format!(" {n} disagree on the number of shards")
                        ],
                    ));
                }
                return Ok(ResolvedShard {
                    spec,
                    source: "--shard".into(),
                });
            }
            Self::Auto => auto(shards, env)?,
        };
        Ok(spec)
    }
}

fn auto(shards: Option<u32>, env: &dyn Fn(&str) -> Option<String>) -> Result<ResolvedShard> {
    let (name, platform, index) = task_index(env)?;
    let mut source = format!("{name}={index} ({platform})");
    let count = task_count(env, shards, name, index, &mut source)?;
    if count == 0 {
        return Err(Error::invalid(
            Param::Shard,
            text![format!(
                "auto: {COUNT_VAR}=0: a job of no tasks has no shard to check"
            )],
        ));
    }
    if index >= count {
        return Err(Error::invalid(Param::Shard, text![format!("auto: {name}={index} is not below the number of shards {count} ({source}): the indices run from 0 to {}", count - 1)]));
    }
    Ok(ResolvedShard {
        spec: ShardSpec { index, count },
        source,
    })
}

/// This task's index: (variable, platform, index) from the one index variable set (or
/// several that agree).
fn task_index(env: &dyn Fn(&str) -> Option<String>) -> Result<(&'static str, &'static str, u32)> {
    // Every index variable that is set, with its value.
    let mut found: Vec<(&str, &str, u32)> = Vec::new();
    for (name, platform) in INDEX_VARS {
        if let Some(v) = var(env, name) {
            found.push((name, platform, whole(name, &v)?));
        }
    }
    let Some(&(name, platform, index)) = found.first() else {
        if let Some(c) = var(env, COUNT_VAR) {
            return Err(Error::invalid(
                Param::Shard,
                text![format!(
                    "auto: {COUNT_VAR}={c} is set but CLOUD_RUN_TASK_INDEX is not"
                )],
            ));
        }
        let names: Vec<String> = INDEX_VARS
            .iter()
            .map(|(n, p)| format!("{n} ({p})"))
            .collect();
        return Err(Error::invalid(Param::Shard, text![format!("auto: no task index in the environment: none of {} is set; run it as a task of such a job, or give ", names.join(", ")), Param::Shard, " I/N"]));
    };
    if let Some(&(other, _, i)) = found.iter().find(|(_, _, i)| *i != index) {
        return Err(Error::invalid(Param::Shard, text![format!("auto: {name}={index} and {other}={i} disagree on the task index; unset the one that is not this platform's")]));
    }
    Ok((name, platform, index))
}

/// How many tasks there are: from the environment or `--shards` (where it came from is
/// added to `source`); index variable `name` gave `index`.
fn task_count(
    env: &dyn Fn(&str) -> Option<String>,
    shards: Option<u32>,
    name: &str,
    index: u32,
    source: &mut String,
) -> Result<u32> {
    let from_env = var(env, COUNT_VAR)
        .map(|c| whole(COUNT_VAR, &c))
        .transpose()?;
    match (from_env, shards) {
        (Some(c), Some(n)) if c != n => Err(Error::invalid(Param::Shard, text![format!("auto: {COUNT_VAR}={c} but "), Param::Shards, format!(" {n}: they disagree on the number of shards")])),
        (Some(c), _) => {
            source.push_str(&format!(", {COUNT_VAR}={c}"));
            Ok(c)
        }
        (None, Some(n)) => {
            source.push_str(&format!(", --shards {n}"));
            Ok(n)
        }
        (None, None) => Err(Error::invalid(Param::Shard, text![format!("auto: {name}={index} gives this task's index but not how many tasks there are: give "), Param::Shards, format!(" N (the {})", if name == "JOB_COMPLETION_INDEX" {
                "Job's .spec.completions"
            } else {
                "array size"
            })])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    fn auto(shards: Option<u32>, vars: &[(&str, &str)]) -> Result<ResolvedShard> {
        ShardRequest::Auto.resolve(shards, &env(vars))
    }

    fn refused(shards: Option<u32>, vars: &[(&str, &str)]) -> String {
        match auto(shards, vars) {
            Err(e @ (Error::Usage(_) | Error::Invalid { .. })) => e.to_string(),
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn each_platform_gives_its_shard() {
        let r = auto(Some(8), &[("AWS_BATCH_JOB_ARRAY_INDEX", "3")]).unwrap();
        assert_eq!(r.spec, ShardSpec { index: 3, count: 8 });
        assert_eq!(
            r.source,
            "AWS_BATCH_JOB_ARRAY_INDEX=3 (AWS Batch array job), --shards 8"
        );
        let r = auto(Some(4), &[("JOB_COMPLETION_INDEX", "0")]).unwrap();
        assert_eq!(r.spec, ShardSpec { index: 0, count: 4 });
        let r = auto(
            None,
            &[
                ("CLOUD_RUN_TASK_INDEX", "9"),
                ("CLOUD_RUN_TASK_COUNT", "10"),
            ],
        )
        .unwrap();
        assert_eq!(
            r.spec,
            ShardSpec {
                index: 9,
                count: 10
            }
        );
        assert_eq!(
            r.to_string(),
            "shard 9/10 (CLOUD_RUN_TASK_INDEX=9 (Cloud Run job), CLOUD_RUN_TASK_COUNT=10)"
        );
        // --shards agreeing with Cloud Run's count is fine.
        let r = auto(
            Some(10),
            &[
                ("CLOUD_RUN_TASK_INDEX", "2"),
                ("CLOUD_RUN_TASK_COUNT", "10"),
            ],
        )
        .unwrap();
        assert_eq!(
            r.spec,
            ShardSpec {
                index: 2,
                count: 10
            }
        );
    }

    #[test]
    fn nothing_set_is_refused_naming_every_variable() {
        let m = refused(Some(4), &[]);
        for (name, _) in INDEX_VARS {
            assert!(m.contains(name), "{m}");
        }
        assert!(m.contains("--shard I/N"), "{m}");
        // An empty variable is not index 0.
        let m = refused(Some(4), &[("AWS_BATCH_JOB_ARRAY_INDEX", "")]);
        assert!(m.contains("no task index"), "{m}");
        let m = refused(None, &[("CLOUD_RUN_TASK_COUNT", "3")]);
        assert!(m.contains("CLOUD_RUN_TASK_INDEX is not"), "{m}");
    }

    #[test]
    fn disagreements_and_bad_values_are_refused() {
        let m = refused(
            Some(4),
            &[
                ("AWS_BATCH_JOB_ARRAY_INDEX", "1"),
                ("JOB_COMPLETION_INDEX", "2"),
            ],
        );
        assert!(
            m.contains("AWS_BATCH_JOB_ARRAY_INDEX=1 and JOB_COMPLETION_INDEX=2 disagree"),
            "{m}"
        );
        // The same index from two variables is one index.
        let r = auto(
            Some(4),
            &[
                ("AWS_BATCH_JOB_ARRAY_INDEX", "1"),
                ("JOB_COMPLETION_INDEX", "1"),
            ],
        )
        .unwrap();
        assert_eq!(r.spec, ShardSpec { index: 1, count: 4 });
        let m = refused(
            Some(8),
            &[
                ("CLOUD_RUN_TASK_INDEX", "1"),
                ("CLOUD_RUN_TASK_COUNT", "10"),
            ],
        );
        assert!(m.contains("CLOUD_RUN_TASK_COUNT=10 but --shards 8"), "{m}");
        let m = refused(None, &[("AWS_BATCH_JOB_ARRAY_INDEX", "1")]);
        assert!(m.contains("give --shards N (the array size)"), "{m}");
        let m = refused(None, &[("JOB_COMPLETION_INDEX", "1")]);
        assert!(m.contains(".spec.completions"), "{m}");
        let m = refused(Some(8), &[("AWS_BATCH_JOB_ARRAY_INDEX", "8")]);
        assert!(
            m.contains("AWS_BATCH_JOB_ARRAY_INDEX=8 is not below the number of shards 8"),
            "{m}"
        );
        for bad in ["-1", "one", "1.0", "4294967296"] {
            let m = refused(Some(8), &[("JOB_COMPLETION_INDEX", bad)]);
            assert!(m.contains("is not a whole number"), "{bad}: {m}");
        }
        let m = refused(
            None,
            &[("CLOUD_RUN_TASK_INDEX", "0"), ("CLOUD_RUN_TASK_COUNT", "0")],
        );
        assert!(m.contains("no tasks"), "{m}");
        assert!(ShardRequest::Auto
            .resolve(Some(0), &env(&[("JOB_COMPLETION_INDEX", "0")]))
            .is_err());
    }

    #[test]
    fn fixed_shards_ignore_the_environment_but_not_a_contradicting_count() {
        let fixed: ShardRequest = "2/5".parse().unwrap();
        let r = fixed
            .resolve(None, &env(&[("AWS_BATCH_JOB_ARRAY_INDEX", "4")]))
            .unwrap();
        assert_eq!(r.spec, ShardSpec { index: 2, count: 5 });
        assert!(fixed.resolve(Some(5), &env(&[])).is_ok());
        assert!(fixed.resolve(Some(6), &env(&[])).is_err());
        assert_eq!("AUTO".parse::<ShardRequest>().unwrap(), ShardRequest::Auto);
        let e = "5/5".parse::<ShardRequest>().unwrap_err().to_string();
        assert!(e.contains("or `auto`"), "{e}");
    }
}
