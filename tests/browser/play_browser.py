#!/usr/bin/env python3
"""The playground in a real browser (docs/playground.md): `inboxsim play` driven by clicking.

    python3 tests/browser/play_browser.py [--binary build/inboxsim] [--scenario FILE]
                                          [--screenshot build/play-screenshot.png] [--url URL]

Starts `inboxsim play --port 0 SCENARIO` (the URL is the first line it prints), opens the page
in Debian's headless Chromium and drives it through the DevTools protocol, with a small
websocket client written here on the standard library (no package to install), clicking with
real mouse events and pressing real keys:

  1. takes the first enabled event, button by button, to the end of the happy path, and sees
     the verdict with every invariant holding;
  2. goes back to the start and takes a crash fault after a commit, runs on until quiescent,
     and sees the redelivery deduplicated in the swimlane (a new branch);
  3. steps back with the Left key and forks a third branch by picking another choice with the
     Down and Enter keys, then compares the crash branch with the fork (a swimlane each);
  4. asks "can it still break from here?" near the end of the happy path and sees PROVEN;
  5. clicks a delivery in the swimlane and sees its envelope; publishes a copy of a message by
     hand from the Hand panel, runs on, and sees it deduplicated;
  6. saves the scenario file (a download) and reopens the moment from the page's address;
and checks that the console stayed free of errors and the error banner never showed. It saves
a screenshot at 1280x720. Exit 0 when all hold, 1 with a message when one does not, 77 (ctest's
"skipped") when Chromium is not installed. Bounded: ~90 s, then everything is killed.
`--url` drives a server already running instead of starting one.
"""
import argparse
import base64
import glob
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.stdout.reconfigure(line_buffering=True)

DEADLINE_S = 90
START = time.monotonic()


class Failure(Exception):
    pass


def left():
    return DEADLINE_S - (time.monotonic() - START)


def check_time(what):
    if left() <= 0:
        raise Failure('out of time (%d s) while %s' % (DEADLINE_S, what))


# ---- a minimal websocket client (RFC 6455), enough for the DevTools protocol ------------------

class WebSocket:
    def __init__(self, url):
        m = re.match(r'ws://([^/:]+):(\d+)(/.*)', url)
        if not m:
            raise Failure('unexpected DevTools address %r' % url)
        self.sock = socket.create_connection((m.group(1), int(m.group(2))), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        request = ('GET %s HTTP/1.1\r\nHost: %s:%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n'
                   'Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n'
                   % (m.group(3), m.group(1), m.group(2), key))
        self.sock.sendall(request.encode())
        head = b''
        while b'\r\n\r\n' not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise Failure('DevTools closed the websocket handshake')
            head += chunk
        status, self.buffer = head.split(b'\r\n\r\n', 1)
        if b' 101 ' not in status.split(b'\r\n')[0]:
            raise Failure('DevTools refused the websocket: %r' % status[:200])

    def _read(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise Failure('the browser closed the DevTools connection')
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def send(self, text):
        payload = text.encode()
        header = bytearray([0x81])
        n = len(payload)
        if n < 126:
            header.append(0x80 | n)
        elif n < 1 << 16:
            header.append(0x80 | 126)
            header += struct.pack('>H', n)
        else:
            header.append(0x80 | 127)
            header += struct.pack('>Q', n)
        mask = os.urandom(4)
        header += mask
        self.sock.sendall(bytes(header) + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def recv(self, timeout):
        self.sock.settimeout(max(0.1, timeout))
        message = b''
        while True:
            b1, b2 = self._read(2)
            opcode, n = b1 & 0x0F, b2 & 0x7F
            if n == 126:
                n = struct.unpack('>H', self._read(2))[0]
            elif n == 127:
                n = struct.unpack('>Q', self._read(8))[0]
            if b2 & 0x80:
                mask = self._read(4)
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(self._read(n)))
            else:
                data = self._read(n)
            if opcode == 0x8:
                raise Failure('the browser closed the DevTools connection')
            if opcode == 0x9:  # ping: answer, keep reading
                continue
            if opcode in (0x0, 0x1, 0x2):
                message += data
                if b1 & 0x80:
                    return message.decode('utf-8', 'replace')


class Page:
    """One Chromium tab over the DevTools protocol; keeps every console error it reports."""

    def __init__(self, ws_url):
        self.ws = WebSocket(ws_url)
        self.next_id = 0
        self.errors = []
        for domain in ('Runtime', 'Log', 'Page'):
            self.call(domain + '.enable')

    def _event(self, message):
        method, params = message.get('method'), message.get('params', {})
        if method == 'Runtime.consoleAPICalled' and params.get('type') in ('error', 'assert'):
            self.errors.append('console.%s: %s' % (params['type'], ' '.join(
                str(a.get('value', a.get('description', ''))) for a in params.get('args', []))))
        elif method == 'Runtime.exceptionThrown':
            d = params.get('exceptionDetails', {})
            self.errors.append('exception: %s %s' % (d.get('text', ''), d.get('exception', {}).get('description', '')))
        elif method == 'Log.entryAdded' and params.get('entry', {}).get('level') == 'error':
            e = params['entry']
            self.errors.append('log: %s %s' % (e.get('text', ''), e.get('url', '')))

    def call(self, method, **params):
        self.next_id += 1
        wanted = self.next_id
        self.ws.send(json.dumps({'id': wanted, 'method': method, 'params': params}))
        while True:
            check_time('waiting for ' + method)
            message = json.loads(self.ws.recv(left()))
            if message.get('id') == wanted:
                if 'error' in message:
                    raise Failure('%s failed: %s' % (method, message['error']))
                return message.get('result', {})
            self._event(message)

    def js(self, expression):
        r = self.call('Runtime.evaluate', expression=expression, returnByValue=True, awaitPromise=True)
        if 'exceptionDetails' in r:
            raise Failure('script %r threw: %s' % (expression[:80], r['exceptionDetails'].get('text')))
        return r.get('result', {}).get('value')

    def wait(self, expression, what, timeout=20):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            check_time(what)
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.05)
        raise Failure('timed out (%d s) waiting for %s' % (timeout, what))

    def click(self, selector, what):
        """A real mouse click at the centre of the first element matching selector."""
        box = self.js('''(function () {
            var e = document.querySelector(%s); if (!e) return null;
            e.scrollIntoView({block: 'center', inline: 'center'});
            var r = e.getBoundingClientRect();
            return {x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width, h: r.height,
                    disabled: !!e.disabled};
        })()''' % json.dumps(selector))
        if not box:
            raise Failure('no %s on the page (%s)' % (what, selector))
        if box['disabled'] or box['w'] <= 0:
            raise Failure('%s is disabled or hidden (%s)' % (what, selector))
        for kind in ('mouseMoved', 'mousePressed', 'mouseReleased'):
            self.call('Input.dispatchMouseEvent', type=kind, x=box['x'], y=box['y'], button='left',
                      clickCount=1)

    def key(self, key, code, keycode):
        for kind in ('keyDown', 'keyUp'):
            self.call('Input.dispatchKeyEvent', type=kind, key=key, code=code,
                      windowsVirtualKeyCode=keycode, nativeVirtualKeyCode=keycode)

    def screenshot(self, path):
        data = self.call('Page.captureScreenshot', format='png')['data']
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, 'wb') as f:
            f.write(base64.b64decode(data))


# ---- the page's own signals ---------------------------------------------------------------------

RENDERS = "Number(document.body.getAttribute('data-renders') || 0)"
IDLE = "document.body.getAttribute('data-busy') === '0'"


def act(page, do, what, timeout=20):
    """Does something that asks the server, then waits until the page has drawn the answer."""
    before = page.js(RENDERS)
    do()
    page.wait('%s > %d && %s' % (RENDERS, before, IDLE), what + ' to be drawn', timeout)
    banner = page.js("document.getElementById('banner').hidden ? '' : document.getElementById('banner-text').textContent")
    if banner:
        raise Failure('the page shows an error after %s: %s' % (what, banner))


def counter(page):
    return page.js("document.getElementById('counter').textContent")


def branch_count(page):
    return page.js("document.querySelectorAll('#branches li').length")


def take_first(page, n):
    act(page, lambda: page.click('#enabled .choice.first .take', 'the first enabled event'),
        'move %d' % n)


def ended(page):
    return page.js("document.getElementById('verdict').getAttribute('data-verdict')") in ('pass', 'fail')


def run(page, url, screenshot):
    page.call('Emulation.setDeviceMetricsOverride', width=1280, height=720, deviceScaleFactor=1, mobile=False)
    page.call('Page.navigate', url=url)
    page.wait("document.body && %s >= 1 && %s" % (RENDERS, IDLE), 'the page to open its story', 20)
    title = page.js("document.getElementById('title').textContent")
    print('play_browser: opened %r' % title)

    # 1. The happy path, event by event.
    moves = 0
    while not ended(page):
        if moves >= 400:
            raise Failure('the happy path did not end within 400 moves')
        if not page.js("!!document.querySelector('#enabled .choice.first .take')"):
            raise Failure('no enabled event before the end (at %s)' % counter(page))
        moves += 1
        take_first(page, moves)
    verdict = page.js("document.getElementById('verdict').getAttribute('data-verdict')")
    badges = page.js("Array.prototype.map.call(document.querySelectorAll('#invariants .badge'), "
                     "function (b) { return [b.textContent, b.getAttribute('data-ok')]; })")
    if verdict != 'pass':
        raise Failure('the happy path ended %s: %s' % (verdict, page.js("document.getElementById('verdict-box').textContent")))
    if not badges or any(ok != '1' for _, ok in badges):
        raise Failure('not every invariant holds at the end of the happy path: %s' % badges)
    happy_moves = moves
    print('play_browser: ok: happy path, %d moves, %d invariants hold' % (moves, len(badges)))

    # 2. A crash after a commit: back to the start, step until such a fault is offered.
    act(page, lambda: page.click('#b-home', 'the start button'), 'going back to the start')
    crash = None
    pick = '''(function () {
        var all = Array.prototype.slice.call(document.querySelectorAll('#enabled .faults button[data-fault="crash"]'));
        var i = all.findIndex(function (b) { return /after[ _-]?(the )?commit/i.test(b.textContent); });
        if (i < 0) i = all.findIndex(function (b) { return /commit/i.test(b.textContent) && !/before/i.test(b.textContent); });
        if (i < 0) return null;
        all.forEach(function (b) { b.removeAttribute('data-pick'); });
        all[i].setAttribute('data-pick', '1');
        return all[i].textContent;
    })()'''
    for n in range(happy_moves + 1):
        crash = page.js(pick)
        if crash:
            break
        act(page, lambda: page.key('ArrowRight', 'ArrowRight', 39), 'the Right key (step %d)' % (n + 1))
    if not crash:
        raise Failure('no "crash after commit" fault was offered anywhere on the happy path')
    at = counter(page)
    act(page, lambda: page.click('#enabled .faults button[data-pick="1"]', 'the crash fault'), 'the crash')
    if branch_count(page) != 2:
        raise Failure('taking %r at %s did not fork a second branch (%d branches)' % (crash, at, branch_count(page)))
    act(page, lambda: page.click('#b-run', 'Run on'), 'run on until quiescent', 30)
    lanes = page.js('''(function () {
        var rows = Array.prototype.slice.call(document.querySelectorAll('#swimlanes g.ev'));
        var re = rows.findIndex(function (g) { return g.classList.contains('k-deliver') && /REDELIVERED/.test(g.textContent); });
        var hit = rows.findIndex(function (g, i) { return i > re && g.classList.contains('k-dedupe_hit'); });
        var crashed = rows.some(function (g) { return g.classList.contains('k-crash'); });
        return {redelivered: re, dedupe: hit, crashed: crashed, rows: rows.length};
    })()''')
    if not lanes['crashed'] or lanes['redelivered'] < 0 or lanes['dedupe'] < 0:
        raise Failure('after %r at %s and run on: swimlane %s (want a crash, a REDELIVERED delivery, then a dedupe hit)'
                      % (crash, at, lanes))
    if page.js("document.getElementById('verdict').getAttribute('data-verdict')") != 'pass':
        raise Failure('the crash branch did not end with every invariant holding')
    print('play_browser: ok: %r at %s: redelivered (row %d), deduped (row %d)'
          % (crash, at, lanes['redelivered'] + 1, lanes['dedupe'] + 1))
    # The picture for the README: the redelivery selected, its envelope beside it.
    page.click('#swimlanes g.ev[data-i="%d"] .hit' % lanes['redelivered'], 'the redelivery in the swimlane')
    page.wait("!!document.getElementById('envelope')", 'the envelope of the redelivery', 5)
    page.screenshot(screenshot)
    print('play_browser: screenshot: %s' % screenshot)

    # 3. Back with the Left key, then another choice there: a third branch.
    before = counter(page)
    act(page, lambda: page.key('ArrowLeft', 'ArrowLeft', 37), 'the Left key')
    after = counter(page)
    if before == after:
        raise Failure('the Left key did not go back (%s)' % before)
    find_other = '''(function () {
        var takes = document.querySelectorAll('#enabled .choice .take');
        if (takes.length > 1) { takes[1].setAttribute('data-pick', '2'); return takes[1].textContent; }
        var f = document.querySelector('#enabled .faults button');
        if (f) { f.setAttribute('data-pick', '2'); return f.textContent; }
        return null;
    })()'''
    other = page.js(find_other)
    for n in range(60):
        if other:
            break
        # Only one thing can happen here: further back, until there is a choice.
        act(page, lambda: page.key('ArrowLeft', 'ArrowLeft', 37), 'the Left key (%d)' % (n + 2))
        after = counter(page)
        other = page.js(find_other)
    if not other:
        raise Failure('going back from %s, no moment offered another choice to fork with' % before)
    # Picked with the keyboard: Down until the choice has the focus, then Enter.
    for n in range(40):
        if page.js("document.activeElement && document.activeElement.getAttribute('data-pick') === '2'"):
            break
        page.key('ArrowDown', 'ArrowDown', 40)
    else:
        raise Failure('the Down key never reached %r' % other)
    act(page, lambda: page.key('Enter', 'Enter', 13), 'the fork (Enter)')
    if branch_count(page) != 3:
        raise Failure('taking %r after going back did not fork a third branch (%d branches)' % (other, branch_count(page)))
    print('play_browser: ok: back (%s -> %s), forked with %r picked by the keyboard' % (before, after, other))

    # The crash branch and the fork side by side, each with its own swimlane.
    page.click('.tabs button[data-tab="moves"]', 'the Moves tab')
    page.js('''(function () {
        document.getElementById('cmp-a').value = '1';
        document.getElementById('cmp-b').value = '2';
    })()''')
    page.click('#b-compare', 'Compare')
    lanes = page.wait('''!document.getElementById('compare').hidden && %s &&
        document.querySelectorAll('#cmp-cols .clanes svg g.ev').length > 0 &&
        Array.prototype.filter.call(document.querySelectorAll('#cmp-cols .clanes'), function (c) {
            return c.querySelector('svg g.ev'); }).length''' % IDLE, 'the two swimlanes', 20)
    if lanes != 2:
        raise Failure('compare shows %r swimlanes, not 2' % lanes)
    page.key('Escape', 'Escape', 27)
    page.wait("document.getElementById('compare').hidden", 'compare to close on Esc', 5)
    print('play_browser: ok: two branches compared, a swimlane each')

    # 4. Can it still break? Near the end of the happy path, one crash more: PROVEN.
    page.click('.tabs button[data-tab="moves"]', 'the Moves tab')
    act(page, lambda: page.click('#branches button[data-branch="0"]', 'the main branch'), 'opening the main branch')
    back_to = max(0, happy_moves - 4)
    act(page, lambda: page.click('#moves button[data-move="%d"]' % back_to, 'move %d' % (back_to + 1)),
        'returning before move %d' % (back_to + 1))
    page.click('.tabs button[data-tab="break"]', 'the Break? tab')
    page.js('''(function () {
        document.getElementById('x-k').value = '1';
        document.getElementById('x-seconds').value = '20';
        Array.prototype.forEach.call(document.querySelectorAll('#x-kinds input'), function (x) { x.checked = x.value === 'crash'; });
    })()''')
    page.click('#x-run', 'Can it still break?')
    page.wait("!!document.getElementById('x-verdict') && %s" % IDLE, 'the explorer\'s answer', 40)
    answer = page.js("document.getElementById('x-verdict').getAttribute('data-verdict') + ': ' + document.getElementById('x-verdict').textContent")
    if not answer.startswith('PROVEN'):
        raise Failure('"can it still break?" before move %d with one crash answered %s' % (back_to + 1, answer))
    print('play_browser: ok: %s' % answer[:200])

    # 5. A delivery's envelope, by clicking its swimlane row.
    act(page, lambda: page.click('#b-end', 'the end button'), 'the end of the main branch')
    page.click('#swimlanes g.ev.k-deliver .hit', 'a delivery in the swimlane')
    envelope = page.wait("(document.getElementById('envelope') || {}).textContent", 'the envelope of the delivery', 5)
    if '{' not in envelope:
        raise Failure('the envelope shown is not JSON: %r' % envelope[:200])
    print('play_browser: ok: envelope shown (%d characters)' % len(envelope))

    # 5b. A duplicate by hand: m-1 published again from the Hand panel, then run on: deduped.
    page.click('.tabs button[data-tab="hand"]', 'the Hand tab')
    page.wait("document.getElementById('h-id').value !== ''", 'a publish template', 5)
    rows_before = page.js("document.querySelectorAll('#swimlanes g.ev').length")
    act(page, lambda: page.click('#h-publish', 'Publish'), 'the publication by hand')
    act(page, lambda: page.click('#b-run', 'Run on'), 'run on after the publication', 30)
    hand = page.js('''(function () {
        var rows = Array.prototype.slice.call(document.querySelectorAll('#swimlanes g.ev')).slice(%d);
        return {copy: rows.some(function (g) { return /publish COPY/.test(g.textContent); }),
                dedupe: rows.some(function (g) { return g.classList.contains('k-dedupe_hit'); }),
                rows: rows.length, verdict: document.getElementById('verdict').getAttribute('data-verdict')};
    })()''' % rows_before)
    if not hand['copy'] or not hand['dedupe'] or hand['verdict'] != 'pass':
        raise Failure('publishing %s again by hand and running on: %s (want the copy, a dedupe hit, every invariant holding)'
                      % (page.js("document.getElementById('h-id').value"), hand))
    print('play_browser: ok: a copy published by hand was deduped (%d new rows)' % hand['rows'])

    # 6. Keep and share: Save downloads the scenario file; the address opens the same moment.
    downloads = tempfile.mkdtemp(prefix='inboxsim-play-downloads.')
    try:
        page.call('Page.setDownloadBehavior', behavior='allow', downloadPath=downloads)
        page.click('#b-save', 'Save')
        page.wait(IDLE, 'the scenario file', 10)
        end = time.monotonic() + 10
        saved = []
        while time.monotonic() < end and not saved:
            saved = [f for f in os.listdir(downloads) if f.endswith('.json')]
            time.sleep(0.1)
        if not saved:
            raise Failure('Save downloaded no .json file (%s)' % os.listdir(downloads))
        with open(os.path.join(downloads, saved[0])) as f:
            json.load(f)
        print('play_browser: ok: Save downloaded %s' % saved[0])
    finally:
        shutil.rmtree(downloads, ignore_errors=True)
    link, where = page.js('window.location.href'), counter(page)
    if '#' not in link:
        raise Failure('the address holds no moment: %s' % link)
    page.call('Page.navigate', url='about:blank')
    page.call('Page.navigate', url=link)
    page.wait("document.body && %s >= 1 && %s" % (RENDERS, IDLE), 'the link to open', 20)
    reopened = counter(page)
    if reopened.split(' · ')[0] != where.split(' · ')[0]:
        raise Failure('the link opened %r, not the moment it was taken at (%r)' % (reopened, where))
    print('play_browser: ok: the link reopened %s' % reopened)

    # The page at 1280x720: no horizontal scroll; the screenshot.
    wide = page.js('document.documentElement.scrollWidth')
    if wide > 1280:
        raise Failure('the page scrolls sideways at 1280x720 (%d px wide)' % wide)
    page.js('1')  # collect any late console messages
    banner = page.js("document.getElementById('banner').hidden ? '' : document.getElementById('banner-text').textContent")
    if banner:
        raise Failure('the page shows an error: %s' % banner)
    if page.errors:
        raise Failure('the console has errors:\n  ' + '\n  '.join(page.errors[:10]))


def start_chromium(profile):
    binary = shutil.which('chromium') or shutil.which('chromium-browser')
    if not binary:
        print('play_browser: skipped: chromium is not installed (apt-get install -y chromium)')
        sys.exit(77)
    proc = subprocess.Popen(
        [binary, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--disable-extensions', '--remote-debugging-port=0', '--remote-debugging-address=127.0.0.1',
         '--user-data-dir=' + profile, '--window-size=1280,720', 'about:blank'],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    port_file = os.path.join(profile, 'DevToolsActivePort')
    end = time.monotonic() + 20
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise Failure('chromium exited at start: %s' % proc.stderr.read().decode(errors='replace')[-500:])
        if os.path.exists(port_file):
            lines = open(port_file).read().split()
            if len(lines) >= 2:
                return proc, int(lines[0])
        time.sleep(0.1)
    raise Failure('chromium did not open its DevTools port in 20 s')


def page_target(port):
    end = time.monotonic() + 10
    while time.monotonic() < end:
        with urllib.request.urlopen('http://127.0.0.1:%d/json/list' % port, timeout=5) as r:
            targets = json.load(r)
        for t in targets:
            if t.get('type') == 'page' and t.get('webSocketDebuggerUrl'):
                return t['webSocketDebuggerUrl']
        time.sleep(0.1)
    raise Failure('chromium shows no page target')


def start_server(binary, scenario):
    if not os.access(binary, os.X_OK):
        raise Failure('%s is not built (cmake --build build)' % binary)
    proc = subprocess.Popen([binary, 'play', '--port', '0', scenario], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    # The URL is the first line on stdout; read it with a deadline.
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    line = b''
    end = time.monotonic() + 15
    while not line.endswith(b'\n') and time.monotonic() < end:
        if not sel.select(timeout=max(0.05, end - time.monotonic())):
            continue
        chunk = os.read(proc.stdout.fileno(), 1)
        if not chunk:
            break
        line += chunk
    url = line.decode(errors='replace').strip()
    if not url.startswith('http://'):
        stop(proc)
        raise Failure('`inboxsim play` printed no URL first (got %r; stderr: %s)'
                      % (url, proc.stderr.read().decode(errors='replace')[-400:]))
    return proc, url


def stop(proc):
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def main():
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--binary', default=os.path.join(root, 'build', 'inboxsim'))
    ap.add_argument('--scenario', default=(sorted(glob.glob(os.path.join(root, 'scenarios', '01-*.json'))) or [''])[0])
    ap.add_argument('--screenshot', default=os.path.join(root, 'build', 'play-screenshot.png'))
    ap.add_argument('--url', help='drive a server already running at URL')
    args = ap.parse_args()

    server = browser = None
    profile = tempfile.mkdtemp(prefix='inboxsim-play-browser.')
    try:
        if args.url:
            url = args.url
        else:
            server, url = start_server(args.binary, args.scenario)
        print('play_browser: server at %s' % url)
        browser, port = start_chromium(profile)
        page = Page(page_target(port))
        run(page, url, args.screenshot)
        print('play_browser: PASS in %.1f s' % (time.monotonic() - START))
        return 0
    except Failure as failure:
        print('play_browser: FAIL: %s' % failure, file=sys.stderr)
        return 1
    except (OSError, ValueError) as error:
        print('play_browser: FAIL: %s: %s' % (type(error).__name__, error), file=sys.stderr)
        return 1
    finally:
        stop(browser)
        stop(server)
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
