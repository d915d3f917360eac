//! A script saved with Windows line endings: its `#!/bin/sh\r` names no
//! interpreter, and the kernel says only "No such file or directory". The
//! result and the errlog say what is wrong and how to fix it.

mod support;

use support::{err_of, once_yaml, Tree};

const CRLF: &str = "script has CRLF (Windows) line endings; convert it with dos2unix";

#[test]
fn a_crlf_script_is_reported_with_its_line_endings_in_the_result_and_the_errlog() {
    let t = Tree::new("crlf");
    t.file("custom/win.sh", "#!/bin/sh\r\necho ok fine\r\n", 0o755);
    t.file(
        "custom/env.sh",
        "#!/usr/bin/env sh\r\necho ok fine\r\n",
        0o755,
    );
    t.script("custom/unix.sh", "echo ok unix");
    let (code, y, out) = once_yaml(t.path(), &[]);
    assert_eq!(code, 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        err_of(&y, "custom", "win"),
        Some(format!("exit 126: {CRLF}").as_str()),
        "{y:?}"
    );
    assert_eq!(
        err_of(&y, "custom", "env"),
        Some(format!("exit 127: {CRLF}").as_str()),
        "{y:?}"
    );
    assert!(y["custom"].get("unix").is_some(), "{y:?}");
    let log = t.errlog("custom");
    assert!(log.contains(&format!("not started: {CRLF}")), "{log}");
}
