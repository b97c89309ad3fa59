#!/usr/bin/env python3
"""The HTML report at a projector's size (docs/usage.md, `run --html`), driven in Chromium.

    python3 tests/browser/report_browser.py BINARY SCENARIO_DIR [--screenshots DIR]

Writes reports with `inboxsim run --html`, opens each in Debian's headless Chromium at 1280x720
through the DevTools protocol (the small client in play_browser.py) and checks what a teacher
relies on:

  1. no text is drawn under 12 px, on a run with seven lanes (scenario 33 with two instances):
     every visible text's computed font size, times the scale its SVG is drawn at; the diagram
     scrolls sideways instead;
  2. the description is folded behind "more", and the diagram's first row is in the first view;
  3. on a run where nothing breaks, no invariant badge wears the ring, at the opening and at
     every event; on a failing run the broken badge wears it at its event;
  4. a duplicate's two deliveries (scenario 04) are drawn in one colour, another message's in
     another;
  5. the envelope panel of a redelivery shows message-id, redelivered and x-delivery-count
     beside the body;
  6. a crash (scenario 09) draws a "down" bar on the crashed lane from the crash to the restart;
  7. every run's report is byte-identical when written twice;
  8. the description's "watch for" (scenario 04) is in the first view, and clicking it opens the
     run at the event it names.
With --screenshots it saves PNGs there. Exit 0 when all hold, 1 with a message when one does
not, 77 (ctest's "skipped") without Chromium.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import play_browser as pb  # noqa: E402  (the DevTools client, Chromium start and stop)

Failure = pb.Failure
pb.DEADLINE_S = 110


def write_report(binary, scenario, html, *extra):
    done = subprocess.run([binary, 'run', scenario, '--quiet', '--html', html] + list(extra),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if done.returncode not in (0, 1):
        raise Failure('inboxsim run %s exited %d: %s' % (scenario, done.returncode, done.stderr.decode()[-300:]))
    with open(html, 'rb') as f:
        return f.read()


def open_page(page, url):
    page.call('Page.navigate', url=url)
    page.wait("document.readyState === 'complete' && /events|event /.test(document.getElementById('counter').textContent)",
              'the report to open', 30)


SMALLEST_TEXT = r'''(function () {
  var smallest = {px: 1e9, text: ''};
  var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (var node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.textContent.trim()) continue;
    var el = node.parentElement;
    if (el.closest('script, style, title, [hidden]')) continue;
    var style = getComputedStyle(el);
    if (style.display === 'none' || style.visibility === 'hidden') continue;
    if (!el.getClientRects().length) continue;  // not laid out (inside a closed <details>)
    var px = parseFloat(style.fontSize);
    if (el instanceof SVGElement) {
      var m = el.getScreenCTM();
      px *= Math.hypot(m.a, m.b);
    }
    if (px < smallest.px) smallest = {px: px, text: node.textContent.trim().slice(0, 60)};
  }
  return smallest;
})()'''


def check_text_sizes(page, shots):
    lanes = page.js("document.querySelectorAll('#lanes-head .lanebox').length")
    if lanes < 4:
        raise Failure('scenario 33 with two instances draws %d lanes; the check needs 4 or more' % lanes)
    for moment in ('opening', 'stepped'):
        if moment == 'stepped':
            page.key('ArrowRight', 'ArrowRight', 39)
            page.key('ArrowRight', 'ArrowRight', 39)
        smallest = page.js(SMALLEST_TEXT)
        if smallest['px'] < 11.95:
            raise Failure('at 1280x720 with %d lanes (%s) "%s" is drawn at %.1f px, under 12'
                          % (lanes, moment, smallest['text'], smallest['px']))
    wide = page.js("[document.getElementById('diagram').scrollWidth, document.getElementById('diagram').clientWidth]")
    if wide[0] <= wide[1]:
        raise Failure('the seven-lane diagram does not scroll sideways (%s): was it scaled down?' % wide)
    if page.js('document.documentElement.scrollWidth') > 1280:
        raise Failure('the page itself scrolls sideways at 1280 px; only the diagram should')
    if shots:
        page.screenshot(os.path.join(shots, 'report-33-seven-lanes.png'))
    print('report_browser: ok: %d lanes, smallest text %.1f px, the diagram scrolls sideways (%d of %d px)'
          % (lanes, smallest['px'], wide[1], wide[0]))


def check_folded(page):
    state = page.js('''(function () {
        var d = document.getElementById('description');
        var row = document.querySelector('#swimlanes g.ev .hit');
        return {folded: !!d && d.tagName === 'DETAILS' && !d.open,
                more: !!d && /more/.test(getComputedStyle(d.querySelector('.more'), '::before').content),
                rowTop: row.getBoundingClientRect().top, scrollY: window.scrollY};
    })()''')
    if not state['folded'] or not state['more']:
        raise Failure('the description is not folded behind "more": %s' % state)
    if state['scrollY'] != 0 or state['rowTop'] > 720 - 30:
        raise Failure("the diagram's first row is not in the first view (at %d px of 720)" % state['rowTop'])
    print('report_browser: ok: description folded, first row at %d px' % state['rowTop'])


RINGED = "Array.prototype.filter.call(document.querySelectorAll('#live-invariants .badge'), function (b) { return getComputedStyle(b).outlineStyle !== 'none' && parseFloat(getComputedStyle(b).outlineWidth) > 0; }).map(function (b) { return b.textContent; })"


def check_no_false_ring(page):
    count = page.js("document.querySelectorAll('#swimlanes g.ev').length")
    page.key('Home', 'Home', 36)
    ringed = page.js(RINGED)
    if ringed:
        raise Failure('at the opening of a run where nothing breaks, badges wear the ring: %s' % ringed)
    for i in range(count):
        page.key('ArrowRight', 'ArrowRight', 39)
        ringed = page.js(RINGED)
        if ringed:
            raise Failure('at event %d of a run where nothing breaks, badges wear the ring: %s' % (i + 1, ringed))
    print('report_browser: ok: no ring on a never-broken badge at the opening or at any of %d events' % count)


def check_ring_on_break(page):
    page.wait("document.querySelector('#live-invariants .badge.broken') !== null", 'a broken badge', 10)
    ringed = page.js(RINGED)
    broken = page.js("Array.prototype.map.call(document.querySelectorAll('#live-invariants .badge.broken'), function (b) { return b.textContent; })")
    if not ringed or any(r not in broken for r in ringed):
        raise Failure('at the first violation the ring is on %s; broken: %s' % (ringed, broken))
    print('report_browser: ok: at the first violation the ring is on %s only' % ringed)


def check_duplicate_colour(page):
    colours = page.js('''(function () {
        var data = JSON.parse(document.getElementById('run-data').textContent), out = {};
        Array.prototype.forEach.call(document.querySelectorAll('#swimlanes g.ev'), function (g) {
          var e = data.events[Number(g.getAttribute('data-i'))], line = g.querySelector('line.arrow');
          if (!line || e.kind !== 'deliver') return;
          (out[e.message_id] = out[e.message_id] || []).push(getComputedStyle(line).stroke);
        });
        return out;
    })()''')
    twice = [m for m, c in colours.items() if len(c) >= 2]
    if not twice:
        raise Failure('scenario 04 shows no message delivered twice: %s' % colours)
    for m in twice:
        if len(set(colours[m])) != 1:
            raise Failure('the deliveries of %s are drawn in different colours: %s' % (m, colours[m]))
    others = [c[0] for m, c in colours.items() if m != twice[0]]
    if others and all(c == colours[twice[0]][0] for c in others):
        raise Failure('every message is drawn in one colour: %s' % colours)
    print('report_browser: ok: both deliveries of %s are %s; other messages differ' % (twice[0], colours[twice[0]][0]))


def check_envelope(page, shots):
    index = page.js('''(function () {
        var data = JSON.parse(document.getElementById('run-data').textContent);
        for (var i = 0; i < data.events.length; i++) if (data.events[i].kind === 'deliver' && data.events[i].redelivered) return i;
        return -1;
    })()''')
    if index < 0:
        raise Failure('scenario 09 has no redelivery')
    page.click('#swimlanes g.ev[data-i="%d"] .hit' % index, 'the redelivery')
    box = page.js('''(function () {
        var env = document.getElementById('live-envelope'), props = document.getElementById('live-props'),
            body = document.getElementById('live-body');
        if (env.hidden) return null;
        var p = props.getBoundingClientRect(), b = body.getBoundingClientRect();
        return {props: props.textContent, body: body.textContent, beside: p.right <= b.left + 1 && p.top < b.bottom && b.top < p.bottom};
    })()''')
    if not box:
        raise Failure('clicking the redelivery shows no envelope')
    for word in ('message-id', 'redelivered: true', 'x-delivery-count', 'delivery-tag'):
        if word not in box['props']:
            raise Failure('the envelope panel lacks %r: %s' % (word, box['props']))
    if '"messageId"' not in box['body'] or not box['beside']:
        raise Failure('the AMQP properties are not beside the envelope body: %s' % box)
    if shots:
        page.js("document.getElementById('panel').scrollTop = document.getElementById('live-envelope').offsetTop - 120")
        page.screenshot(os.path.join(shots, 'report-09-redelivery.png'))
    print('report_browser: ok: the redelivery shows %s beside its body' % ' · '.join(box['props'].split('\n')[:1]))


def check_down_span(page):
    found = page.js('''(function () {
        var data = JSON.parse(document.getElementById('run-data').textContent);
        var crash = -1, restart = -1;
        data.events.forEach(function (e, i) {
          if (e.kind === 'crash' && crash < 0) crash = i;
          if (e.kind === 'restart' && crash >= 0 && restart < 0 && e.service === data.events[crash].service) restart = i;
        });
        if (crash < 0 || restart < 0) return {error: 'no crash and restart'};
        var lane = Array.prototype.filter.call(document.querySelectorAll('#lanes-head text.lanename'), function (t) {
          return t.textContent === data.events[crash].service; })[0];
        var span = document.querySelector('#swimlanes g.span.s-down rect');
        if (!span) return {error: 'no down span drawn'};
        function mid(i) { var r = document.querySelector('#swimlanes g.ev[data-i="' + i + '"] .hit').getBoundingClientRect(); return r.top + r.height / 2; }
        var s = span.getBoundingClientRect(), l = lane.getBoundingClientRect();
        return {top: s.top, bottom: s.bottom, from: mid(crash), to: mid(restart),
                centre: s.left + s.width / 2, lane: l.left + l.width / 2};
    })()''')
    if 'error' in found:
        raise Failure('scenario 09: %s' % found['error'])
    if abs(found['top'] - found['from']) > 2 or abs(found['bottom'] - found['to']) > 2 or abs(found['centre'] - found['lane']) > 2:
        raise Failure('the down bar does not run on the crashed lane from the crash to the restart: %s' % found)
    print('report_browser: ok: a down bar on the crashed lane from the crash to the restart (%d px)'
          % (found['bottom'] - found['top']))


def check_watch_for(page):
    link = page.js('''(function () {
        var a = document.getElementById('watch-for');
        if (!a) return null;
        var r = a.getBoundingClientRect();
        return {href: a.getAttribute('href'), bottom: r.bottom, text: a.textContent};
    })()''')
    if not link:
        raise Failure('scenario 04 shows no "watch for" link')
    if link['bottom'] > 720:
        raise Failure('the "watch for" is below the first view (%d px of 720)' % link['bottom'])
    # The "(event N)" at its end: the link itself may wrap over two lines.
    page.click('#watch-for .at', 'the "watch for" link')
    number = int(link['href'].split('-')[1])
    try:
        counter = page.wait("(function () { var c = document.getElementById('counter').textContent;"
                            " return c.indexOf('event %d /') === 0 ? c : ''; })()" % number,
                            'the event the "watch for" names', timeout=5)
    except Failure:
        raise Failure('clicking the "watch for" (%s) opened %r, address %r' % (
            link['href'], page.js("document.getElementById('counter').textContent"),
            page.js('window.location.hash')))
    print('report_browser: ok: the "watch for" links to %s and opens it (%s)' % (link['href'], counter))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('binary')
    ap.add_argument('scenarios')
    ap.add_argument('--screenshots')
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix='inboxsim-report-browser.')
    shots = args.screenshots
    if shots:
        os.makedirs(shots, exist_ok=True)
    browser = None
    try:
        reports = {}
        runs = {'33': ('33-masstransit-concurrent-first-delivery.json', []),
                '04': ('04-two-identical-deliveries.json', []),
                '09': ('09-crash-after-commit.json', []),
                '33-broken': ('33-masstransit-concurrent-first-delivery.json',
                              ['--set', 'account.inbox=none', '--set', 'account.ledger_unique=false'])}
        for key, (name, extra) in runs.items():
            html = os.path.join(work, key + '.html')
            first = write_report(args.binary, os.path.join(args.scenarios, name), html, *extra)
            again = write_report(args.binary, os.path.join(args.scenarios, name), html + '.again', *extra)
            if first != again:
                raise Failure('%s: two runs with the same seed wrote different HTML' % key)
            reports[key] = 'file://' + html
        print('report_browser: ok: every report is byte-identical when written twice')
        browser, port = pb.start_chromium(os.path.join(work, 'profile'))
        page = pb.Page(pb.page_target(port))
        page.call('Emulation.setDeviceMetricsOverride', width=1280, height=720, deviceScaleFactor=1, mobile=False)
        open_page(page, reports['33'])
        check_folded(page)
        if shots:
            page.screenshot(os.path.join(shots, 'report-33-first-view.png'))
        check_text_sizes(page, shots)
        open_page(page, reports['09'])
        check_no_false_ring(page)
        check_down_span(page)
        check_envelope(page, shots)
        open_page(page, reports['04'])
        check_duplicate_colour(page)
        open_page(page, reports['04'])
        check_watch_for(page)
        open_page(page, reports['33-broken'])
        check_ring_on_break(page)
        if page.errors:
            raise Failure('the console has errors:\n  ' + '\n  '.join(page.errors[:10]))
        print('report_browser: PASS in %.1f s' % (time.monotonic() - pb.START))
        return 0
    except Failure as failure:
        print('report_browser: FAIL: %s' % failure, file=sys.stderr)
        return 1
    finally:
        pb.stop(browser)


if __name__ == '__main__':
    sys.exit(main())
