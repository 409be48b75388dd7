//! Adoption in a Redis Cluster: the legacy keys moved into the new
//! filter's slot, copied first when they lie in other slots.

use rotabloom::connect::Connection;
use rotabloom::Legacy;

/// The keys a legacy layout reads.
fn sources(legacy: &Legacy) -> Vec<String> {
    match legacy {
        Legacy::ScrapyRedisBloomfilter { key, .. } => vec![key.clone()],
        Legacy::Seed000 { prefix, blocks } => {
            (0..*blocks).map(|b| format!("{prefix}{b}")).collect()
        }
    }
}

fn keyslot(conn: &mut Connection, key: &str) -> anyhow::Result<i64> {
    Ok(redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(conn)
        .map_err(rotabloom::Error::from)?)
}

/// Copies each of `from` to `PREFIX<index>`; returns the copies made (a
/// missing key is not copied). On a failure the copies are deleted.
fn copy_all(conn: &mut Connection, from: &[String], prefix: &str) -> anyhow::Result<Vec<String>> {
    let mut copies = Vec::new();
    for (b, k) in from.iter().enumerate() {
        let to = format!("{prefix}{b}");
        match rotabloom::dump::copy_string(conn, k, &to) {
            Ok(0) => {}
            Ok(_) => copies.push(to),
            Err(e) => {
                copies.push(to);
                unlink(conn, &copies);
                return Err(e.into());
            }
        }
    }
    Ok(copies)
}

/// Whether the legacy keys are worth copying: strings, at least one.
fn copyable(conn: &mut Connection, keys: &[String]) -> anyhow::Result<bool> {
    let mut strings = 0;
    for k in keys {
        let ty: String = redis::cmd("TYPE")
            .arg(k)
            .query(conn)
            .map_err(rotabloom::Error::from)?;
        match ty.as_str() {
            "string" => strings += 1,
            "none" => {}
            _ => return Ok(false),
        }
    }
    Ok(strings > 0)
}

pub fn unlink(conn: &mut Connection, keys: &[String]) {
    for k in keys {
        let _ = redis::cmd("UNLINK").arg(k).exec(conn);
    }
}

/// Whether `conn` is to a Redis Cluster (never, built without `cluster`).
fn is_cluster(conn: &Connection) -> bool {
    #[cfg(feature = "cluster")]
    return matches!(conn, Connection::Cluster(_));
    #[cfg(not(feature = "cluster"))]
    return {
        let _ = conn;
        false
    };
}

/// In a cluster, adoption renames the legacy keys into the filter's slot,
/// which `RENAME` cannot do across slots: keys elsewhere are first copied
/// (1 MiB per step) to `rotabloom-import:{NAME}:B`, in the filter's slot,
/// and those are adopted; the originals stay. Returns the layout to adopt
/// and the copies made. Without `copy` (the filter exists: adopting again
/// compares) only the names are mapped, as the first adoption recorded
/// them. Keys that are missing, or not strings, are not copied: the
/// library refuses them by their own names.
pub fn into_slot(
    conn: &mut Connection,
    name: &str,
    legacy: Legacy,
    copy: bool,
) -> anyhow::Result<(Legacy, Vec<String>)> {
    if !is_cluster(conn) {
        return Ok((legacy, Vec::new()));
    }
    let home = keyslot(conn, &format!("{{{name}}}"))?;
    let from = sources(&legacy);
    let mut elsewhere = false;
    for k in &from {
        elsewhere |= keyslot(conn, k)? != home;
    }
    if !elsewhere {
        return Ok((legacy, Vec::new()));
    }
    let prefix = format!("rotabloom-import:{{{name}}}:");
    let copies = match copy {
        true if !copyable(conn, &from)? => return Ok((legacy, Vec::new())),
        true => copy_all(conn, &from, &prefix)?,
        false => Vec::new(),
    };
    let legacy = match legacy {
        Legacy::ScrapyRedisBloomfilter { bit, hashes, .. } => Legacy::ScrapyRedisBloomfilter {
            key: format!("{prefix}0"),
            bit,
            hashes,
        },
        Legacy::Seed000 { blocks, .. } => Legacy::Seed000 { prefix, blocks },
    };
    Ok((legacy, copies))
}
