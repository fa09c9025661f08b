//! A small client of the Chrome DevTools Protocol over one WebSocket: it
//! starts a headless Chromium with a fresh profile and a debugging port the
//! browser picks, opens one page target attached in flat mode, and sends
//! commands to it, keeping every event that arrives meanwhile so a test can
//! read what the page did (requests, log entries, console calls,
//! exceptions).

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

/// How long one answer or event may take.
const WAIT: Duration = Duration::from_secs(60);

/// A headless Chromium and one page of it.
pub struct Browser {
    child: Child,
    ws: WebSocket<TcpStream>,
    session: String,
    next_id: u64,
    /// Every event received so far, in arrival order.
    pub events: Vec<Value>,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts `chromium` headless and attaches to a blank page.
    pub fn launch(chromium: &Path) -> Browser {
        let profile = tempfile::tempdir().expect("a profile folder");
        let mut child = Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
                "--window-size=1200,900",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromium.display()));
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.split("DevTools listening on ").nth(1) {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let url = match rx.recv_timeout(WAIT) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not print its DevTools address within {WAIT:?}");
            }
        };
        let address = url
            .strip_prefix("ws://")
            .and_then(|rest| rest.split('/').next())
            .expect("a ws:// address")
            .to_string();
        let stream = TcpStream::connect(&address).expect("connect to the DevTools port");
        stream.set_read_timeout(Some(WAIT)).expect("read timeout");
        let (ws, _) = tungstenite::client(url.as_str(), stream).expect("DevTools handshake");
        let mut browser = Browser {
            child,
            ws,
            session: String::new(),
            next_id: 0,
            events: Vec::new(),
            _profile: profile,
        };
        let target = browser.call("Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"]
            .as_str()
            .expect("a target id")
            .to_string();
        let attached = browser.call(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        for domain in ["Page", "Network", "Log", "Runtime"] {
            browser.send(&format!("{domain}.enable"), json!({}));
        }
        browser
    }

    fn read(&mut self) -> Value {
        loop {
            match self.ws.read().expect("a DevTools message") {
                Message::Text(text) => {
                    return serde_json::from_str(text.as_str()).expect("DevTools JSON")
                }
                Message::Close(_) => panic!("the browser closed the DevTools connection"),
                _ => continue,
            }
        }
    }

    fn command(&mut self, method: &str, params: Value, session: bool) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if session {
            message["sessionId"] = Value::String(self.session.clone());
        }
        self.ws
            .send(Message::text(message.to_string()))
            .expect("send a DevTools command");
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            let answer = self.read();
            if answer["id"] == json!(id) {
                if let Some(error) = answer.get("error") {
                    panic!("{method} failed: {error}");
                }
                return answer["result"].clone();
            }
            if answer.get("method").is_some() {
                self.events.push(answer);
            }
        }
        panic!("no answer to {method} within {WAIT:?}");
    }

    /// A browser-level command.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.command(method, params, false)
    }

    /// A command to the page.
    pub fn send(&mut self, method: &str, params: Value) -> Value {
        self.command(method, params, true)
    }

    /// Waits for an event of the page named `method` not yet seen.
    pub fn wait_for(&mut self, method: &str) -> Value {
        let seen = self.events.len();
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            let event = self.read();
            if event.get("method").is_some() {
                self.events.push(event.clone());
                if event["method"] == method {
                    return event;
                }
            }
        }
        panic!(
            "no {method} within {WAIT:?}; events after waiting began: {:?}",
            &self.events[seen..]
        );
    }

    /// Navigates to `url` and waits until the page has loaded.
    pub fn open(&mut self, url: &str) {
        self.events.clear();
        self.send("Page.navigate", json!({"url": url}));
        self.wait_for("Page.loadEventFired");
        // A round trip after the load: events the load caused arrive first.
        self.evaluate("document.readyState");
    }

    /// The value of a JavaScript expression evaluated in the page (by the
    /// protocol, which the page's policy does not govern).
    pub fn evaluate(&mut self, expression: &str) -> Value {
        let answer = self.send(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        if let Some(exception) = answer.get("exceptionDetails") {
            panic!("evaluating {expression} threw: {exception}");
        }
        answer["result"]["value"].clone()
    }

    /// A PNG screenshot of the page, its full height.
    pub fn screenshot(&mut self) -> Vec<u8> {
        use base64::Engine;
        let shot = self.send(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("screenshot data"))
            .expect("base64 screenshot")
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.ws.close(None);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
