(function () {
  'use strict';
  // Errors are collected for the self-test (report.html#selftest), which fails on any.
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });
  var data = JSON.parse(document.getElementById('run-data').textContent);
  var events = data.events, count = events.length, cur = -1, timer = null;
  var byId = function (id) { return document.getElementById(id); };
  var svg = byId('swimlanes'), scrub = byId('scrub'), laneHead = byId('lanes-head');
  var controls = byId('controls'), panel = byId('panel'), diagram = byId('diagram');
  var rows = Array.prototype.slice.call(svg.querySelectorAll('g.ev'));
  var spans = Array.prototype.slice.call(svg.querySelectorAll('g.span'));
  scrub.max = String(count - 1);
  // A windowed page (a long run) draws some of the trace's events: `number` gives each drawn
  // event's place in the trace, `segments` the state before each run of consecutive ones.
  var numbers = data.number || null, total = data.total || count, segments = data.segments || null;
  function numberOf(i) { return numbers ? numbers[i] : i; }
  function positionOf(n) {
    if (!numbers) return n;
    for (var i = 0; i < count; i++) if (numbers[i] >= n) return i;
    return count - 1;
  }
  function segmentOf(i) {
    if (!segments) return null;
    var found = segments[0];
    segments.forEach(function (s) { if (s.at <= i) found = s; });
    return found;
  }

  function esc(text) {
    return String(text).replace(/[&<>"]/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c];
    });
  }

  // Where each invariant first broke, from the trace's violation events ("name: detail").
  var brokenAt = {}, firstViolation = -1;
  events.forEach(function (e, i) {
    if (e.kind !== 'violation') return;
    var name = e.invariant;
    if (!(name in brokenAt)) brokenAt[name] = i;
    if (firstViolation < 0) firstViolation = i;
  });

  // ---- the tables, replayed from the recorded changes ------------------------------------------
  var spec = data.rows.tables || [], opening = data.rows.opening || [],
      changes = data.rows.changes || {};
  var tables = [], tablesAt = -1, touched = {}, counts = [], tablesSegment = null;
  function apply(change, undo) {
    var rowsOf = tables[change[0]], key = change[2], op = change[1];
    if (undo) {
      if (op === '+') { delete rowsOf[key]; counts[change[0]]--; } else {
        if (op === '-') counts[change[0]]++;
        rowsOf[key] = change[4];
      }
    } else {
      if (op === '-') { delete rowsOf[key]; counts[change[0]]--; } else {
        if (op === '+') counts[change[0]]++;
        rowsOf[key] = change[3];
      }
    }
  }
  // The tables before the first event of segment `seg` (the whole run on a full page).
  function resetTables(seg) {
    tables = spec.map(function () { return {}; });
    counts = spec.map(function () { return 0; });
    (seg ? seg.opening : opening).forEach(function (c) { apply(c, false); touched[c[0]] = true; });
    if (seg) counts = seg.counts.slice();
    tablesSegment = seg;
    tablesAt = seg ? seg.at - 1 : -1;
  }
  Object.keys(changes).forEach(function (i) {
    changes[i].forEach(function (c) { touched[c[0]] = true; });
  });
  (segments || []).forEach(function (seg) {
    seg.opening.forEach(function (c) { touched[c[0]] = true; });
    seg.counts.forEach(function (n, t) { if (n > 0) touched[t] = true; });
  });
  resetTables(segmentOf(0));
  // Moves the replayed tables to "after event `upto`": forwards by applying, backwards by undoing.
  function tablesTo(upto) {
    var seg = segmentOf(Math.max(upto, 0));
    if (seg !== tablesSegment) resetTables(seg);
    while (tablesAt < upto) {
      tablesAt++;
      (changes[tablesAt] || []).forEach(function (c) { apply(c, false); });
    }
    while (tablesAt > upto) {
      (changes[tablesAt] || []).slice().reverse().forEach(function (c) { apply(c, true); });
      tablesAt--;
    }
  }
  var sourceColour = {'account-service': '#1971c2', 'transfer-service': '#6741d9',
                      'broker': '#e8590c'};
  function cellHtml(value, diff) {
    var cls = (value === null ? 'null' : '') + (diff ? ' diff' : '');
    return '<td' + (cls.trim() ? ' class="' + cls.trim() + '"' : '') + '>' +
           (value === null ? 'NULL' : esc(value)) + '</td>';
  }
  function tableHtml(index, now) {
    var columns = spec[index][2], present = tables[index], marks = {};
    now.forEach(function (c) { if (c[0] === index) marks[c[2]] = c; });
    var keys = Object.keys(present).concat(Object.keys(marks).filter(function (k) {
      return !(k in present);
    })).map(Number).sort(function (a, b) { return a - b; });
    var shown = keys.map(function (k) {
      var mark = marks[k];
      return {key: k, mark: mark, values: k in present ? present[k] : mark[4]};
    });
    // Columns that are NULL in every row shown are left out: the panel is narrow.
    var used = columns.map(function (_, c) {
      return shown.some(function (r) { return r.values[c] !== null && r.values[c] !== ''; });
    });
    var n = counts[index], inView = Object.keys(present).length;
    var head = '<div class="cap"><b>' + esc(spec[index][1]) + '</b> · ' + n + ' row' +
               (n === 1 ? '' : 's') + (segments && inView < n ? ' (' + inView + ' shown: those these events touch)' : '') +
               '</div>';
    if (!shown.length) return '<div class="dbt">' + head + '</div>';
    var html = '<div class="dbt">' + head + '<table><tr>' + columns.map(function (name, c) {
      return used[c] ? '<th>' + esc(name) + '</th>' : '';
    }).join('') + '</tr>';
    shown.forEach(function (r) {
      var cls = !r.mark ? '' : r.mark[1] === '+' ? 'ins' : r.mark[1] === '~' ? 'upd' : 'del';
      html += '<tr data-key="' + r.key + '"' + (cls ? ' class="' + cls + '"' : '') + '>' +
              r.values.map(function (v, c) {
                if (!used[c]) return '';
                var diff = cls === 'upd' && r.mark[4] && r.mark[4][c] !== v;
                return cellHtml(v, diff);
              }).join('') + '</tr>';
    });
    return html + '</table></div>';
  }
  function renderTables(upto) {
    if (!spec.length) { byId('live-tables').innerHTML = '<p class="hint">not recorded</p>'; return; }
    tablesTo(upto);
    var now = upto >= 0 ? (changes[upto] || []) : [], html = '', source = null, idle = [];
    spec.forEach(function (t, index) {
      if (t[0] !== source) {
        if (idle.length) html += '<div class="untouched">empty all run: ' + esc(idle.join(', ')) + '</div>';
        idle = [];
        source = t[0];
        html += '<div class="source" style="background:' + (sourceColour[source] || '#495057') +
                '">' + esc(source) + '</div>';
      }
      if (!touched[index]) { idle.push(t[1]); return; }
      html += tableHtml(index, now);
    });
    if (idle.length) html += '<div class="untouched">empty all run: ' + esc(idle.join(', ')) + '</div>';
    byId('live-tables').innerHTML = html;
    markScrollingTables();
  }
  // A table wider than the panel scrolls sideways: a shadow on its right edge and a word say so.
  function markScrollingTables() {
    Array.prototype.forEach.call(byId('live-tables').querySelectorAll('.dbt'), function (box) {
      var scrolls = box.scrollWidth > box.clientWidth + 1;
      box.classList.toggle('scrolls', scrolls);
      var cap = box.querySelector('.cap');
      if (scrolls && cap && !cap.querySelector('.cue')) {
        cap.insertAdjacentHTML('beforeend', '<span class="cue">⇆ scroll sideways for more columns</span>');
      }
    });
  }

  // ---- balances, sagas, invariants ------------------------------------------------------------
  // Balances and saga states after event `upto`, replayed from the opening balances.
  function stateAt(upto) {
    var seg = segmentOf(Math.max(upto, 0));
    var state = {balances: Object.assign({}, seg ? seg.balances : data.opening),
                 sagas: seg ? Object.assign({}, seg.sagas) : {}, account: null, transfer: null};
    if (!seg) data.transfers.forEach(function (id) { state.sagas[id] = '—'; });
    for (var i = seg ? seg.at : 0; i <= upto; i++) {
      var e = events[i];
      if (e.kind === 'effect') {
        state.balances[e.account] = (state.balances[e.account] || 0) + (e.amount || 0);
        if (i === upto) state.account = e.account;
      } else if (e.kind === 'request') {
        state.sagas[e.transfer] = 'REQUESTED';
      } else if (e.kind === 'saga') {
        state.sagas[e.transfer] = e.saga_to;
        if (i === upto) state.transfer = e.transfer;
      }
    }
    return state;
  }

  function tableRows(map, highlight) {
    return Object.keys(map).map(function (key) {
      return '<tr' + (key === highlight ? ' class="changed"' : '') + '><td>' + esc(key) +
             '</td><td class="n">' + esc(map[key]) + '</td></tr>';
    }).join('');
  }

  function renderInvariants(upto) {
    byId('live-invariants').innerHTML = data.invariants.map(function (name) {
      var at = name in brokenAt ? brokenAt[name] : -1, broken = at >= 0 && at <= upto;
      // The ring marks the event where it broke: never an invariant that holds.
      return '<span class="badge' + (broken ? ' broken' : '') + (broken && at === upto ? ' here' : '') +
             '" title="' + esc(broken ? 'broken at event ' + (at + 1) : 'holds so far') + '">' +
             (broken ? '✖ ' : '✓ ') + esc(name) + '</span>';
    }).join('');
  }

  function showEvent(e) {
    var envelope = byId('live-envelope');
    if (!e) { byId('live-event').innerHTML = ''; envelope.hidden = true; return; }
    byId('live-event').innerHTML = Object.keys(e).map(function (key) {
      return '<tr><td>' + esc(key) + '</td><td>' + esc(e[key]) + '</td></tr>';
    }).join('');
    // The envelope in full (projectors and touch screens have no hover for the tooltip), beside
    // the AMQP properties the broker carries with it, as RabbitMQ's management UI shows them.
    var body = e.message_id && data.envelopes[e.message_id];
    envelope.hidden = !body;
    byId('live-body').innerHTML = body ? '<b>body (envelope)</b>' + esc(JSON.stringify(body, null, 2)) : '';
    byId('live-props').innerHTML = body ? propertiesHtml(e) : '';
  }
  function propertiesHtml(e) {
    function prop(key, value, cls) {
      return '<div><span class="k">' + esc(key) + ':</span> <span class="v' + (cls ? ' ' + cls : '') +
             '">' + esc(value) + '</span></div>';
    }
    if (data.broker === 'jetstream') return jetStreamHtml(e, prop);
    var html = '<b>AMQP properties</b>' + prop('message-id', e.message_id);
    if (e.type) html += prop('type', e.type);
    if (e.type && data.routing[e.type]) html += prop('routing-key', data.routing[e.type]);
    html += prop('content-type', 'application/json');
    if (e.kind === 'deliver' || e.tag) {
      var holder = e.kind === 'deliver' ? e.to : e.service;
      html += prop('delivery-tag', e.tag ? e.tag + (holder ? ' (' + holder + "'s channel)" : '') : '—');
      html += prop('redelivered', e.redelivered ? 'true' : 'false', e.redelivered ? 'yes' : '');
      // RabbitMQ adds the header only once a quorum queue has had the message back.
      html += '<b>headers</b>' + prop('x-delivery-count', e.delivery_count ? e.delivery_count : '(absent)',
                                         e.delivery_count ? 'yes' : '');
    }
    return html;
  }
  // On JetStream: the message's header and subject, and a delivery's metadata as a client reads
  // it (nats.c's jsMsgMetaData): the consumer's sequence of this delivery and NumDelivered, which
  // counts this delivery too.
  function jetStreamHtml(e, prop) {
    var html = '<b>NATS headers</b>' + prop('Nats-Msg-Id', e.message_id);
    if (e.type && data.routing[e.type]) html += prop('subject', data.routing[e.type]);
    if (e.kind === 'deliver' || e.tag) {
      html += '<b>JetStream metadata</b>' + prop('consumer sequence', e.tag ? e.tag : '—');
      html += prop('NumDelivered', (e.delivery_count || 0) + 1, e.redelivered ? 'yes' : '');
    }
    return html;
  }

  // ---- keeping the selection in view -----------------------------------------------------------
  // The rows are visible between the sticky lane header and the bottom of the window.
  // The diagram scrolls in its own box (both ways: a wide one sideways), under its sticky
  // lane header; the box itself is kept inside the window.
  function visibleBand() {
    var box = diagram.getBoundingClientRect();
    var bottom = Math.min(window.innerHeight, box.top + diagram.clientHeight);
    return {top: Math.max(laneHead.getBoundingClientRect().bottom, controls.getBoundingClientRect().bottom),
            bottom: bottom};
  }
  function reveal(row) {
    var box = diagram.getBoundingClientRect();
    if (box.top + diagram.clientHeight > window.innerHeight) {
      window.scrollBy(0, box.top + diagram.clientHeight - window.innerHeight + 4);
    }
    var r = row.getBoundingClientRect(), band = visibleBand();
    if (r.top < band.top + 4 || r.bottom > band.bottom - 4) {
      diagram.scrollTop += r.top - band.top - (band.bottom - band.top - r.height) / 2;
    }
    // Sideways: the event's arrow or marker with its label, if part of it is out of the box;
    // when the two do not fit, the arrow or marker wins.
    var mark = row.querySelector('line.arrow, circle.dot');
    if (mark) {
      var m = mark.getBoundingClientRect(), left = box.left + 8, right = box.left + diagram.clientWidth - 8;
      var label = row.querySelector('text.lbl'), l = label ? label.getBoundingClientRect() : m;
      var from = Math.min(m.left, l.left), to = Math.max(m.right, l.right);
      if (to - from > right - left) { from = m.left; to = m.right; }
      if (from < left) diagram.scrollLeft += from - left;
      else if (to > right) diagram.scrollLeft += Math.min(to - right, from - left);
    }
  }
  // The bars on the lanes as far as the selected event: a crash's "down" bar grows row by row.
  function renderSpans() {
    var rowHeight = Number(svg.getAttribute('data-row-height'));
    spans.forEach(function (span) {
      var a = Number(span.getAttribute('data-a')), b = Number(span.getAttribute('data-b'));
      var rect = span.querySelector('rect');
      if (!rect.hasAttribute('data-h')) rect.setAttribute('data-h', rect.getAttribute('height'));
      span.classList.toggle('future', cur >= 0 && a > cur);
      var full = Number(rect.getAttribute('data-h'));
      var height = full;
      if (cur >= a && cur < b) {
        var y0 = Number(rect.getAttribute('y'));
        var hit = rows[cur].querySelector('.hit');
        height = Math.max(rowHeight / 2, Number(hit.getAttribute('y')) + rowHeight / 2 - y0);
      }
      rect.setAttribute('height', String(Math.min(full, height)));
    });
  }
  // Brings the first highlighted table row into the panel's own scroll box.
  function revealChangedRow() {
    var changed = panel.querySelector('.dbt tr.ins, .dbt tr.upd, .dbt tr.del');
    if (!changed) return;
    var r = changed.getBoundingClientRect(), p = panel.getBoundingClientRect();
    if (r.top < p.top || r.bottom > p.bottom) panel.scrollTop += r.top - p.top - p.height / 3;
  }

  function render(scroll) {
    svg.classList.toggle('stepping', cur >= 0);
    rows.forEach(function (row, i) {
      row.classList.toggle('cur', i === cur);
      row.classList.toggle('future', cur >= 0 && i > cur);
    });
    var state = stateAt(cur);
    byId('live-balances').innerHTML = tableRows(state.balances, state.account);
    byId('live-sagas').innerHTML = tableRows(state.sagas, state.transfer);
    var when = cur < 0 ? '(opening)' : '(at ' + events[cur].t + ' ms)';
    byId('bal-when').textContent = when;
    byId('inv-when').textContent = when;
    byId('counter').textContent =
        cur < 0 ? total + ' events' : 'event ' + (numberOf(cur) + 1) + ' / ' + total;
    byId('now').textContent = cur < 0 ? 'press → or ▶ play to step through the run'
                                      : events[cur].t + ' ms  ' + data.text[cur];
    scrub.value = String(cur);
    showEvent(events[cur]);
    renderInvariants(cur);
    renderTables(cur);
    renderSpans();
    if (scroll && cur >= 0) { reveal(rows[cur]); revealChangedRow(); }
  }

  function go(index) {
    cur = Math.max(-1, Math.min(count - 1, index));
    render(true);
  }

  function stepBoundary(direction) {
    for (var i = cur + direction; i >= 0 && i < count; i += direction) {
      if (events[i].kind === 'step') return i;
    }
    return direction > 0 ? count - 1 : -1;
  }

  function stop() {
    if (timer !== null) clearInterval(timer);
    timer = null;
    byId('b-play').textContent = '▶ play';
  }

  function play() {
    if (timer !== null) { stop(); return; }
    if (cur >= count - 1) cur = -1;
    byId('b-play').textContent = '❚❚ pause';
    timer = setInterval(function () {
      if (cur >= count - 1) { stop(); return; }
      go(cur + 1);
    }, 900);
  }

  function button(id, action) {
    byId(id).addEventListener('click', function () { action(); this.blur(); });
  }
  button('b-first', function () { stop(); go(-1); });
  button('b-prev', function () { stop(); go(cur - 1); });
  button('b-next', function () { stop(); go(cur + 1); });
  button('b-last', function () { stop(); go(count - 1); });
  button('b-play', play);
  byId('b-violation').hidden = firstViolation < 0;
  button('b-violation', function () { stop(); go(firstViolation); });
  scrub.addEventListener('input', function () { stop(); go(Number(scrub.value)); });
  rows.forEach(function (row, i) {
    row.addEventListener('click', function () { stop(); go(i); });
  });
  document.addEventListener('keydown', function (event) {
    if (event.target === scrub || event.altKey || event.ctrlKey || event.metaKey) return;
    var keys = {
      ArrowRight: function () { go(event.shiftKey ? stepBoundary(1) : cur + 1); },
      ArrowLeft: function () { go(event.shiftKey ? stepBoundary(-1) : cur - 1); },
      Home: function () { go(-1); },
      End: function () { go(count - 1); },
      v: function () { if (firstViolation >= 0) go(firstViolation); },
      w: function () { toggleWide(); }
    };
    if (event.key === ' ') { event.preventDefault(); play(); return; }
    if (!keys[event.key]) return;
    event.preventDefault();
    stop();
    keys[event.key]();
  });

  function toggleWide() {
    document.body.classList.toggle('wide-panel');
    byId('b-wide').textContent = document.body.classList.contains('wide-panel') ? '⇔ narrower' : '⇔ wider';
    markScrollingTables();
  }
  button('b-wide', toggleWide);

  // The sticky lane header sits under the controls bar, whatever height it wraps to.
  function measureBar() {
    document.documentElement.style.setProperty('--bar', controls.offsetHeight + 'px');
  }
  window.addEventListener('resize', measureBar);
  measureBar();

  // A link can open the page at one moment of the run: report.html#event-12, also when the
  // address changes after the page has loaded.
  function openFromAddress() {
    var wanted = /^#event-(\d+)$/.exec(window.location.hash);
    if (wanted) { stop(); go(positionOf(Number(wanted[1]) - 1)); return true; }
    return false;
  }
  window.addEventListener('hashchange', openFromAddress);
  if (!openFromAddress()) {
    // A failing run opens where it first went wrong.
    if (!data.passed && firstViolation >= 0) { go(firstViolation); } else { render(false); }
  }
  if (window.location.hash === '#selftest') selfTest();

  // ---- the self-test (report.html#selftest, read back with chromium --dump-dom) ---------------
  // Steps through every event with the arrow key, as a user would, and checks what a user
  // relies on: the selected row is in view, the panel shows the event's changed rows, the
  // balances end as the run reported, stepping back replays the tables exactly, the violation
  // control lands on the first violation, and a new #event-N address is followed.
  function selfTest() {
    var failures = [], forward = [], opened = cur;
    function check(ok, what) { if (!ok && failures.length < 20) failures.push(what); }
    function key(name) {
      document.dispatchEvent(new KeyboardEvent('keydown', {key: name, bubbles: true}));
    }
    function inView(i) {
      var r = rows[i].getBoundingClientRect(), band = visibleBand();
      return r.top >= band.top - 1 && r.bottom <= band.bottom + 1;
    }
    // Every label lies inside the diagram: none is clipped at an edge.
    var width = svg.viewBox.baseVal.width;
    Array.prototype.forEach.call(svg.querySelectorAll('text'), function (text) {
      var box = text.getBBox();
      check(box.x >= -1 && box.x + box.width <= width + 1,
            'label "' + text.textContent + '" runs past the diagram (' + Math.round(box.x) +
            '..' + Math.round(box.x + box.width) + ' of ' + width + ')');
    });
    key('Home');
    for (var i = 0; i < count; i++) {
      key('ArrowRight');
      check(cur === i, 'ArrowRight reached event ' + (cur + 1) + ', not ' + (i + 1));
      check(inView(i), 'event ' + (i + 1) + ' is out of view after ArrowRight');
      var changedRows = {};
      (changes[i] || []).forEach(function (c) { changedRows[c[0] + '/' + c[2]] = true; });
      var expected = Object.keys(changedRows).length;
      var marked = byId('live-tables').querySelectorAll('tr.ins, tr.upd, tr.del').length;
      check(marked === expected,
            'event ' + (i + 1) + ' changed ' + expected + ' rows, ' + marked + ' highlighted');
      forward.push(byId('live-tables').innerHTML);
    }
    var final = stateAt(count - 1).balances;
    Object.keys(data.final).forEach(function (account) {
      check(final[account] === data.final[account],
            'balance of ' + account + ' at the end: ' + final[account] + ', the run says ' +
            data.final[account]);
    });
    for (var j = count - 1; j >= 0; j--) {
      check(cur === j, 'ArrowLeft reached event ' + (cur + 1) + ', not ' + (j + 1));
      check(byId('live-tables').innerHTML === forward[j],
            'the tables at event ' + (j + 1) + ' differ stepping back');
      check(inView(j), 'event ' + (j + 1) + ' is out of view after ArrowLeft');
      key('ArrowLeft');
    }
    if (firstViolation >= 0) {
      byId('b-violation').click();
      check(cur === firstViolation, 'first violation control went to event ' + (cur + 1));
      check(inView(firstViolation), 'the first violation is out of view');
      check(byId('live-invariants').querySelector('.badge.broken.here') !== null,
            'no invariant badge turned red at the first violation');
      Array.prototype.forEach.call(byId('live-invariants').children, function (badge) {
        check(badge.scrollWidth <= badge.clientWidth + 1, 'badge "' + badge.textContent + '" is cut');
      });
    }
    var middle = Math.max(0, Math.floor(count / 2) - 1), target = numberOf(middle) + 1;
    window.addEventListener('hashchange', function () {
      check(cur === middle, '#event-' + target + ' opened event ' + (numberOf(cur) + 1));
      check(inView(middle), '#event-' + target + ' is out of view');
      failures = failures.concat(errors);
      var out = document.createElement('pre');
      out.id = 'selftest';
      out.textContent = (failures.length ? 'FAIL\n' + failures.join('\n') : 'PASS ' + count +
                         ' events') + '\nopened at event ' + (opened < 0 ? 0 : numberOf(opened) + 1) +
                         ' of ' + total;
      document.body.setAttribute('data-selftest', failures.length ? 'fail' : 'pass');
      document.body.appendChild(out);
    }, {once: true});
    window.location.hash = '#event-' + target;
  }
})();
