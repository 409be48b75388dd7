//! The request that converts a filter in place into another kind: its
//! kind and parameters change in one atomic step, fenced by the view it
//! was decided from (uid, epoch, cleared), so a filter changed meanwhile
//! is left alone (the script answers STALE and the machine decides again).

use crate::keys::Keys;
use crate::metadata::Kind;
use crate::proto::request::Request;
use crate::scripts;
use crate::view::View;

/// Converts the filter `view` shows from kind `from` to kind `to`, setting
/// `fields`; its epoch becomes `epoch`.
pub(crate) fn request(
    keys: &Keys,
    view: &View,
    epoch: u64,
    from: Kind,
    to: Kind,
    fields: &[(&'static str, String)],
) -> Request {
    let mut cmd = scripts::CONVERT.invoke(&[keys.meta().to_string(), keys.fence()]);
    cmd.arg(&view.uid)
        .arg(view.epoch)
        .arg(view.cleared)
        .arg(from.as_str())
        .arg(epoch);
    cmd.arg(crate::metadata::field::KIND).arg(to.as_str());
    for (f, v) in fields {
        cmd.arg(*f).arg(v);
    }
    let mut req = Request::new();
    req.script(&scripts::CONVERT, cmd);
    req
}
