//! Issue 34 item 9: `export openlineage --post` against a hostile endpoint (a scripted
//! test server on 127.0.0.1, below): a huge answer is not read, a redirect to another
//! origin is not followed, a token in the URL's query is never printed, and the URL's
//! path and query are kept.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use super::openlineage::{post, store};
use crate::support;

/// What the server saw of one request: its target (path and query) and body.
#[derive(Debug, Clone)]
struct Seen {
    target: String,
    body: String,
}

type Answer = Box<dyn Fn(usize, &mut TcpStream) + Send>;

/// A scripted HTTP server on 127.0.0.1: each request is recorded, then `answer` (given
/// the request's number) writes the reply. Runs until the test process ends.
fn server(answer: Answer) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for (n, conn) in listener.incoming().enumerate() {
            let Ok(mut conn) = conn else { continue };
            let Some(s) = read_request(&conn) else {
                continue;
            };
            log.lock().unwrap().push(s);
            answer(n, &mut conn);
        }
    });
    (url, seen)
}

fn read_request(conn: &TcpStream) -> Option<Seen> {
    let mut r = BufReader::new(conn.try_clone().ok()?);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let target = line.split_whitespace().nth(1)?.to_string();
    let mut len = 0;
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        if k.trim().eq_ignore_ascii_case("content-length") {
            len = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(Seen {
        target,
        body: String::from_utf8(body).ok()?,
    })
}

fn reply(conn: &mut TcpStream, status: &str, extra: &str) {
    let _ = write!(
        conn,
        "HTTP/1.1 {status}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
}

#[test]
fn a_huge_error_answer_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    // 500 with a 2 GiB body, of which the server offers 256 MiB: it counts what it could
    // write before the client stopped reading (and closed the connection).
    const OFFER: usize = 256 << 20;
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let (url, seen) = server(Box::new(move |_, conn| {
        let _ = write!(
            conn,
            "HTTP/1.1 500 Boom\r\nContent-Length: {}\r\n\r\n",
            2u64 << 30
        );
        let chunk = vec![b'x'; 1 << 20];
        let mut written = 0;
        while written < OFFER {
            match conn.write(&chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => written += n,
            }
        }
        let _ = tx.lock().unwrap().send(written);
    }));
    let o = post(
        &s,
        &url,
        &["--run-id", "run-a", "--post-retries", "0", "--endpoint", ""],
    );
    let written = rx.recv().unwrap();
    eprintln!("the server wrote {written} bytes of the answer before the client stopped reading");
    // What the client took is the socket buffers' worth (a few MiB on loopback), not the
    // body: reading it whole took all 256 MiB.
    assert!(
        written < 64 << 20,
        "the server wrote {written} bytes before the client stopped reading"
    );
    let (_, err) = support::text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("after 1 attempt(s): HTTP 500"), "{err}");
    assert!(
        err.contains("xxxx…"),
        "the start of the body is quoted: {err}"
    );
    assert!(err.len() < 4096, "{} bytes of stderr", err.len());
    assert_eq!(
        seen.lock().unwrap().len(),
        2,
        "the run's START and COMPLETE, each tried once"
    );
}

#[test]
fn a_redirect_to_another_origin_is_not_followed_and_one_within_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let (elsewhere, stolen) = server(Box::new(|_, conn| reply(conn, "200 OK", "")));
    let to = format!("Location: {elsewhere}/steal?token=ELSEWHERE-SECRET\r\n");
    let (url, seen) = server(Box::new(move |_, conn| {
        reply(conn, "307 Temporary Redirect", &to)
    }));
    let o = post(&s, &url, &["--run-id", "run-a", "--post-retries", "0"]);
    let (out, err) = support::text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(err.contains("HTTP 307"), "{err}");
    assert!(
        err.contains(&format!(
            "redirect to {elsewhere}/steal?token=*** not followed"
        )),
        "{err}"
    );
    assert!(!err.contains("ELSEWHERE-SECRET"), "{err}");
    assert_eq!(seen.lock().unwrap().len(), 2, "START and COMPLETE");
    assert!(
        stolen.lock().unwrap().is_empty(),
        "the other origin received {:?}",
        stolen.lock().unwrap()
    );

    // Within the endpoint's origin, the redirect is followed and the event delivered there.
    let (url, seen) = server(Box::new(|n, conn| match n {
        0 => reply(
            conn,
            "308 Permanent Redirect",
            "Location: /moved/lineage\r\n",
        ),
        _ => reply(conn, "200 OK", ""),
    }));
    let o = post(&s, &url, &["--run-id", "run-a", "--post-retries", "0"]);
    let (out, err) = support::text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("posted 2 events"), "{out}");
    let seen = seen.lock().unwrap().clone();
    let targets: Vec<&str> = seen.iter().map(|s| s.target.as_str()).collect();
    assert_eq!(
        targets,
        ["/api/v1/lineage", "/moved/lineage", "/api/v1/lineage"],
        "the first event redirected, the second not"
    );
    assert_eq!(seen[0].body, seen[1].body);
}

#[test]
fn the_urls_path_and_query_are_kept_and_its_query_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let (base, seen) = server(Box::new(|_, conn| reply(conn, "200 OK", "")));
    let url = format!("{base}/ol/?token=SECRET-ONE");
    let o = post(&s, &url, &["--endpoint", "api/v1/lineage?key=SECRET-TWO"]);
    let (out, err) = support::text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        out.contains(&format!(
            "posted 4 events to {base}/ol/api/v1/lineage?token=***&key=***"
        )),
        "{out}"
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "START and COMPLETE of two runs");
    for s in &seen {
        assert_eq!(
            s.target,
            "/ol/api/v1/lineage?token=SECRET-ONE&key=SECRET-TWO"
        );
    }
    // A base path without the trailing slash is a directory too; no endpoint posts to
    // the URL itself, query and all.
    let (base, seen) = server(Box::new(|_, conn| reply(conn, "200 OK", "")));
    for (url, endpoint, want) in [
        (format!("{base}/ol"), "api/v1/lineage", "/ol/api/v1/lineage"),
        (format!("{base}/hook?t=SECRET-3"), "", "/hook?t=SECRET-3"),
    ] {
        let o = post(&s, &url, &["--run-id", "run-a", "--endpoint", endpoint]);
        let (out, err) = support::text(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert!(
            !out.contains("SECRET") && !err.contains("SECRET"),
            "{out}{err}"
        );
        assert_eq!(seen.lock().unwrap().pop().unwrap().target, want);
    }

    // Refused, and nothing listening (retried, with a warning each time): the query is
    // redacted in the error and the log.
    let (base, _) = server(Box::new(|_, conn| reply(conn, "400 Bad", "")));
    let closed = tokio::net::TcpSocket::new_v4().unwrap();
    closed.bind(([127, 0, 0, 1], 0).into()).unwrap();
    let nobody = format!("http://{}", closed.local_addr().unwrap());
    for (b, code) in [(base, "HTTP 400"), (nobody, "after 2 attempt(s)")] {
        let url = format!("{b}/x?token=SECRET-FOUR");
        let o = post(&s, &url, &["--run-id", "run-a", "--post-retries", "1"]);
        let (out, err) = support::text(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(code), "{err}");
        assert!(err.contains("token=***"), "{err}");
        assert!(
            !out.contains("SECRET") && !err.contains("SECRET"),
            "{out}{err}"
        );
    }
}
