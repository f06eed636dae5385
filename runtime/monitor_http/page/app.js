// manta monitor: the live page. Reads /api/runs, each run's records (/api/metrics, then
// /api/events pushes new ones), /api/run and /api/ranks every 2 s; draws the charts as inline
// SVG. No libraries, nothing from the network but this server. Text from the run goes into
// the page as text (textContent), never as markup.
'use strict';

const SVGNS = 'http://www.w3.org/2000/svg';
const QUERY = new URLSearchParams(location.search);
const TOKEN = QUERY.get('token');
const POLL = QUERY.get('poll') === '1'; // ?poll=1: no event stream, a request every 2 s
const MAX_POINTS = 4000; // per series kept for drawing (older points thinned)
const COLORS = ['#1f6feb', '#bf3989', '#1a7f37']; // series 0, 1, 2 (style.css: .s0 .s1 .s2)

function url(path, params) {
  const q = new URLSearchParams(params || {});
  if (TOKEN) q.set('token', TOKEN);
  const s = q.toString();
  return path + (s ? '?' + s : '');
}

async function getJSON(path, params) {
  const r = await fetch(url(path, params), { cache: 'no-store' });
  if (!r.ok) throw new Error(path + ': HTTP ' + r.status);
  return r.json();
}

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

function sv(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

function num(v) {
  if (v === null || v === undefined) return NaN;
  return Number(v); // "NaN", "Infinity" as the server writes non-finite numbers
}

function fmt(v, digits) {
  if (v === null || v === undefined) return '–';
  const x = num(v);
  if (!isFinite(x)) return String(v);
  const a = Math.abs(x);
  if (a !== 0 && (a >= 1e5 || a < 1e-3)) return x.toExponential(2);
  return x.toFixed(digits === undefined ? 3 : digits);
}

function dur(s) {
  s = num(s);
  if (!isFinite(s)) return '–';
  s = Math.max(0, Math.round(s));
  if (s < 60) return s + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
  return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
}

// ---- charts ----

// One chart: series [{name, pts: [[x, y], ...]}], phase marks [[x, label]].
function drawChart(svg, title, series, marks, yfmt) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  // the drawing's units are the element's pixels, so that text is not stretched
  const W = Math.max(200, Math.round(svg.getBoundingClientRect().width) || 560), H = 150;
  const L = 48, R = 8, T = 16, B = 18;
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  svg.appendChild(sv('text', { x: L, y: 11, class: 'title' }, title));
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (const s of series)
    for (const p of s.pts)
      if (isFinite(p[1])) {
        x0 = Math.min(x0, p[0]); x1 = Math.max(x1, p[0]);
        y0 = Math.min(y0, p[1]); y1 = Math.max(y1, p[1]);
      }
  if (!isFinite(x0)) {
    svg.appendChild(sv('text', { x: W / 2, y: H / 2, class: 'empty', 'text-anchor': 'middle' },
                       'no data yet'));
    return;
  }
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) { y1 += Math.abs(y1) * 0.05 + 1e-6; y0 -= Math.abs(y0) * 0.05 + 1e-6; }
  const pad = (y1 - y0) * 0.06, nonneg = y0 >= 0; y0 -= pad; y1 += pad;
  if (nonneg && y0 < 0) y0 = 0; // figures that cannot be negative keep 0 as their floor
  const X = x => L + (x - x0) / (x1 - x0) * (W - L - R);
  const Y = y => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
  for (let i = 0; i <= 3; i++) {
    const v = y0 + (y1 - y0) * i / 3, yy = Y(v);
    svg.appendChild(sv('line', { x1: L, x2: W - R, y1: yy, y2: yy, class: 'grid' }));
    svg.appendChild(sv('text', { x: L - 4, y: yy + 3, class: 'axis', 'text-anchor': 'end' },
                       yfmt ? yfmt(v) : fmt(v, 3)));
  }
  svg.appendChild(sv('text', { x: L, y: H - 4, class: 'axis' }, 'step ' + Math.round(x0)));
  svg.appendChild(sv('text', { x: W - R, y: H - 4, class: 'axis', 'text-anchor': 'end' },
                     'step ' + Math.round(x1)));
  for (const m of marks || []) {
    if (m[0] <= x0 || m[0] > x1) continue;
    const xx = X(m[0]);
    svg.appendChild(sv('line', { x1: xx, x2: xx, y1: T, y2: H - B, class: 'phase' }));
    svg.appendChild(sv('text', { x: xx + 2, y: T + 8, class: 'plabel' }, m[1]));
  }
  series.forEach((s, k) => {
    let d = '', pen = false, n = 0;
    for (const p of s.pts) {
      if (!isFinite(p[1])) { pen = false; continue; }
      d += (pen ? 'L' : 'M') + X(p[0]).toFixed(1) + ' ' + Y(p[1]).toFixed(1) + ' ';
      pen = true; n++;
    }
    if (n === 1 || s.dots) {
      for (const p of s.pts)
        if (isFinite(p[1]))
          svg.appendChild(sv('circle', { cx: X(p[0]), cy: Y(p[1]), r: 2.5, class: 'dot' + k }));
    }
    if (d) svg.appendChild(sv('path', { d: d, class: 's' + k }));
    if (series.length > 1)
      svg.appendChild(sv('text', { x: W - R - 4, y: 11 + 11 * k, class: 'axis', 'text-anchor': 'end' },
                         s.name)).setAttribute('fill', COLORS[k % COLORS.length]);
  });
}

// ---- one run ----

class Run {
  constructor(index, info, parent) {
    this.index = index;
    this.name = info.name;
    this.seq = 0;
    this.gen = null;
    this.pts = { loss: [], top1: [], epe: [], lr: [], ips: [], macs: [], macsMin: [], macsMax: [] };
    this.marks = [];
    this.lastPhase = null;
    this.vals = [];
    this.stereo = info.task === 'stereo';
    this.sse = null;
    this.sseAt = 0;
    this.build(parent);
  }

  build(parent) {
    const s = el('section', { class: 'run', 'data-run': this.index });
    const h = el('h2');
    h.appendChild(el('span', { class: 'name' }, this.name));
    this.stateEl = el('span', { class: 'state' }, '…');
    h.appendChild(this.stateEl);
    s.appendChild(h);
    this.jobEl = el('div', { class: 'job' });
    s.appendChild(this.jobEl);
    const bar = el('div', { class: 'bar' });
    this.barEl = el('div');
    bar.appendChild(this.barEl);
    s.appendChild(bar);
    this.errEl = el('div', { class: 'errorbox', hidden: '' });
    s.appendChild(this.errEl);
    this.alertsEl = el('ul', { class: 'alerts' });
    s.appendChild(this.alertsEl);
    const charts = el('div', { class: 'charts' });
    this.svgs = {};
    for (const k of ['loss', 'top1', 'lr', 'ips', 'macs', 'val']) {
      const c = el('div', { class: 'chart', 'data-chart': k });
      const g = document.createElementNS(SVGNS, 'svg');
      c.appendChild(g);
      charts.appendChild(c);
      this.svgs[k] = g;
    }
    s.appendChild(charts);
    s.appendChild(el('h3', {}, 'Validation after each phase (largest / smallest sub-network)'));
    this.valEl = el('div');
    s.appendChild(this.valEl);
    s.appendChild(el('h3', {}, 'Ranks (step time split in ms: compute, data wait, allreduce wait; ring MB/s)'));
    this.ranksEl = el('div', { class: 'scroll' });
    s.appendChild(this.ranksEl);
    parent.appendChild(s);
    this.section = s;
  }

  reset() {
    for (const k in this.pts) this.pts[k] = [];
    this.marks = [];
    this.lastPhase = null;
  }

  push(key, x, y) {
    const a = this.pts[key];
    a.push([x, y]);
    if (a.length > MAX_POINTS) { // keep every other one of the older half
      const half = a.length >> 1, keep = [];
      for (let i = 0; i < half; i += 2) keep.push(a[i]);
      this.pts[key] = keep.concat(a.slice(half));
    }
  }

  addRecords(msg) {
    if (this.gen !== null && msg.generation !== this.gen) { this.reset(); }
    this.gen = msg.generation;
    for (const r of msg.records) this.addRecord(r);
    this.seq = Math.max(this.seq, msg.next);
  }

  addRecord(r) {
    if (r.event === 'phase_end') { this.stereo = true; return; }
    if (r.step === undefined || r.loss === undefined) return;
    if (r.event !== undefined && r.event !== 'step') return;
    const x = num(r.step);
    const phase = r.phase_index !== undefined ? num(r.phase_index) : num(r.phase) - 1;
    const pname = typeof r.phase === 'string' ? r.phase : 'phase ' + (phase + 1);
    if (this.lastPhase !== null && phase !== this.lastPhase) this.marks.push([x, pname]);
    if (this.lastPhase === null && phase > 0) this.marks.push([x, pname]);
    this.lastPhase = phase;
    this.push('loss', x, num(r.loss));
    if (r.batch_top1 !== undefined) this.push('top1', x, 100 * num(r.batch_top1));
    if (r.epe !== undefined) { this.stereo = true; this.push('epe', x, num(r.epe)); }
    this.push('lr', x, num(r.lr));
    this.push('ips', x, num(r.images_per_s !== undefined ? r.images_per_s : r.pairs_per_s));
    const sub = r.subnets; // the sizes of the sub-networks sampled since the last report
    if (sub && typeof sub === 'object') {
      this.push('macs', x, num(sub.macs_mean));
      this.push('macsMin', x, num(sub.macs_min));
      this.push('macsMax', x, num(sub.macs_max));
    }
  }

  drawCharts() {
    const unit = this.stereo ? 'pairs/s' : 'images/s';
    drawChart(this.svgs.loss, 'loss', [{ name: 'loss', pts: this.pts.loss }], this.marks);
    if (this.stereo)
      drawChart(this.svgs.top1, 'batch EPE (px)', [{ name: 'EPE', pts: this.pts.epe }], this.marks);
    else
      drawChart(this.svgs.top1, 'batch top-1 (%)', [{ name: 'top-1', pts: this.pts.top1 }],
                this.marks, v => v.toFixed(1));
    drawChart(this.svgs.lr, 'learning rate', [{ name: 'lr', pts: this.pts.lr }], this.marks);
    drawChart(this.svgs.ips, unit, [{ name: unit, pts: this.pts.ips }], this.marks,
              v => v.toFixed(0));
    // shown once a record carries them (classification runs; not stereo)
    this.svgs.macs.parentNode.hidden = !this.pts.macs.length;
    if (this.pts.macs.length)
      drawChart(this.svgs.macs, 'sampled sub-networks: MACs (millions, one image)',
                [{ name: 'mean', pts: this.pts.macs }, { name: 'smallest', pts: this.pts.macsMin },
                 { name: 'largest', pts: this.pts.macsMax }],
                this.marks, v => (v / 1e6).toFixed(v < 1e7 ? 2 : 1));
    this.svgs.val.parentNode.hidden = !this.vals.length; // the table below says "no phase finished yet"
    const epe = this.vals.length && this.vals[this.vals.length - 1].metric === 'epe';
    const big = [], small = [];
    for (const v of this.vals) {
      const k = epe ? 1 : 100;
      big.push([num(v.step), k * num(v.largest)]);
      small.push([num(v.step), k * num(v.smallest)]);
    }
    const s0 = { name: 'largest', pts: big, dots: true }, s1 = { name: 'smallest', pts: small, dots: true };
    drawChart(this.svgs.val, epe ? 'validation EPE (px)' : 'validation top-1 (%)', [s0, s1],
              this.marks, v => v.toFixed(epe ? 2 : 1));
  }

  renderRun(st) {
    this.stereo = this.stereo || st.task === 'stereo';
    this.stateEl.textContent = st.state;
    this.stateEl.className = 'state ' + st.state;
    this.section.setAttribute('data-state', st.state);
    const ph = st.phase || {};
    const job = st.job || {};
    const items = [
      ['space', st.space || job.space || (this.stereo ? 'stereo' : '–')],
      ['schedule', st.schedule || job.schedule || '–'],
      ['phase', (ph.index !== null && ph.index !== undefined ? (ph.index + 1) : '–') +
                (ph.count ? '/' + ph.count : '') + (ph.name ? ' ' + ph.name : '')],
      ['sub-networks / step', ph.subnets !== null && ph.subnets !== undefined ? ph.subnets : '–'],
      ['step', (st.step !== null ? st.step : '–') + (st.steps ? ' / ' + st.steps : '')],
      ['ETA', st.finished ? '–' : dur(st.eta_s)],
      ['checkpoints', st.checkpoints.count + (st.checkpoints.last ? ' (' + st.checkpoints.last + ')' : '')],
      ['last record', st.age_s !== null ? dur(st.age_s) + ' ago' : '–'],
      ['loss', fmt(st.last.loss, 4)],
      [this.stereo ? 'batch EPE' : 'batch top-1',
       this.stereo ? fmt(st.last.epe, 3) + ' px' :
         (st.last.batch_top1 !== null ? (100 * st.last.batch_top1).toFixed(1) + ' %' : '–')],
      ['learning rate', fmt(st.last.lr, 5)],
      [this.stereo ? 'pairs/s' : 'images/s', fmt(st.last.images_per_s, 1)],
    ];
    const sub = st.last.subnets;
    if (sub && sub.macs_mean !== null)
      items.push(['sampled MACs (M)', (sub.macs_mean / 1e6).toFixed(2) +
                  (sub.macs_min !== null && sub.macs_max !== null
                     ? ' (' + (sub.macs_min / 1e6).toFixed(2) + '–' + (sub.macs_max / 1e6).toFixed(2) + ')' : '')]);
    if (job.world_size) items.push(['ranks × devices', job.world_size + ' × ' + (job.devices_per_rank || 1)]);
    if (job.mode) items.push(['mode', job.mode]);
    this.jobEl.textContent = '';
    for (const [k, v] of items) {
      const d = el('div', {}, k);
      d.insertBefore(el('b', {}, String(v)), d.firstChild);
      this.jobEl.appendChild(d);
    }
    const frac = st.steps ? Math.min(1, (st.step || 0) / st.steps) : 0;
    this.barEl.style.width = (100 * frac).toFixed(1) + '%';
    if (st.error) {
      this.errEl.hidden = false;
      this.errEl.textContent = 'stopped by an error' +
        (st.error.rank !== null ? ' on rank ' + st.error.rank : '') +
        (st.error.step !== null ? ' at step ' + st.error.step : '') + ': ' + st.error.message;
    } else {
      this.errEl.hidden = true;
    }
    this.alertsEl.textContent = '';
    this.section.setAttribute('data-alerts', st.alerts.length);
    for (const a of st.alerts)
      if (a.kind !== 'error') // the error is shown above
        this.alertsEl.appendChild(el('li', { class: a.kind, 'data-kind': a.kind }, a.kind + ': ' + a.message));
    this.vals = st.validation || [];
    this.valEl.textContent = '';
    if (!this.vals.length) {
      this.valEl.appendChild(el('p', { class: 'none' }, 'no phase finished yet'));
    } else {
      const epe = this.vals[0].metric === 'epe';
      const t = el('table');
      const hr = el('tr');
      for (const h of ['phase', 'step', epe ? 'largest EPE (px)' : 'largest top-1',
                       epe ? 'smallest EPE (px)' : 'smallest top-1'])
        hr.appendChild(el('th', {}, h));
      t.appendChild(hr);
      for (const v of this.vals) {
        const tr = el('tr');
        tr.appendChild(el('td', {}, v.phase));
        tr.appendChild(el('td', {}, v.step));
        for (const x of [v.largest, v.smallest])
          tr.appendChild(el('td', {}, epe ? fmt(x, 3) : (x === null ? '–' : (100 * x).toFixed(2) + ' %')));
        t.appendChild(tr);
      }
      this.valEl.appendChild(t);
    }
  }

  renderRanks(rk) {
    this.ranksEl.textContent = '';
    if (!rk.ranks.length) {
      this.ranksEl.appendChild(el('p', { class: 'none' }, 'no per-rank figures in this run'));
      return;
    }
    const t = el('table', { class: 'ranks' });
    const hr = el('tr');
    // compute, data and allreduce: milliseconds per step; ring: MB/s
    for (const h of ['rank', 'device', 'img/s', 'compute', 'data', 'allreduce', 'ring',
                     'heartbeat', 'state'])
      hr.appendChild(el('th', h === 'device' || h === 'state' ? { class: 'l' } : {}, h));
    t.appendChild(hr);
    const ms = v => (v === null ? '–' : (1000 * v).toFixed(1));
    for (const r of rk.ranks) {
      const tr = el('tr', { 'data-rank': r.rank, 'data-dead': r.dead ? '1' : '0' });
      if (r.dead) tr.className = 'dead';
      tr.appendChild(el('td', {}, r.rank));
      const dev = (r.device || '–') + (r.host ? ' @ ' + r.host : '');
      tr.appendChild(el('td', { class: 'l dev', title: dev }, dev));
      tr.appendChild(el('td', {}, fmt(r.images_per_s, 1)));
      tr.appendChild(el('td', {}, ms(r.compute_s)));
      tr.appendChild(el('td', {}, ms(r.data_wait_s)));
      tr.appendChild(el('td', {}, ms(r.allreduce_wait_s)));
      tr.appendChild(el('td', {}, r.ring_bytes_per_s === null ? '–' : (r.ring_bytes_per_s / 1e6).toFixed(1)));
      tr.appendChild(el('td', {}, r.heartbeat_age_s === null ? '–' : dur(r.heartbeat_age_s) + ' ago'));
      tr.appendChild(el('td', { class: 'l', title: r.error || '' }, r.dead ? (r.error ? 'dead (error)' : 'dead (no heartbeat)') : 'ok'));
      t.appendChild(tr);
    }
    this.ranksEl.appendChild(t);
    for (const r of rk.ranks)
      if (r.error) this.ranksEl.appendChild(el('p', { class: 'rankerr' }, 'rank ' + r.rank + ': ' + r.error));
  }

  async loadRecords() {
    for (let i = 0; i < 100; i++) { // at most 500000 records at once
      const m = await getJSON('api/metrics', { run: this.index, since: this.seq });
      this.addRecords(m);
      if (m.next >= m.last) break;
    }
  }

  openEvents() {
    if (!window.EventSource || POLL) return;
    const es = new EventSource(url('api/events', { run: this.index, since: this.seq }));
    es.addEventListener('records', ev => {
      this.sseAt = Date.now();
      try { this.addRecords(JSON.parse(ev.data)); this.drawCharts(); } catch (e) { /* next one */ }
    });
    es.onopen = () => { this.sseAt = Date.now(); setConn('live'); };
    es.onerror = () => setConn('reconnecting');
    this.sse = es;
  }

  async refresh() {
    const [st, rk] = await Promise.all([getJSON('api/run', { run: this.index }),
                                        getJSON('api/ranks', { run: this.index })]);
    this.renderRun(st);
    this.renderRanks(rk);
    if (!this.sse || this.sse.readyState === 2) await this.loadRecords(); // no stream: poll
    this.drawCharts();
  }
}

function setConn(s) {
  const c = document.getElementById('conn');
  c.textContent = s;
  c.className = 'conn ' + (s === 'live' ? 'live' : s === 'connecting' ? '' : 'down');
}

async function main() {
  for (const id of ['api-link', 'prom-link']) {
    const a = document.getElementById(id);
    a.setAttribute('href', url(a.getAttribute('href')));
  }
  let runs;
  try {
    runs = (await getJSON('api/runs')).runs;
  } catch (e) {
    const f = document.getElementById('fatal');
    f.hidden = false;
    f.textContent = 'cannot read the monitor\'s API: ' + e.message +
      (String(e.message).indexOf('401') >= 0 ? ' (open the page with ?token=...)' : '');
    setConn('down');
    return;
  }
  const parent = document.getElementById('runs');
  const objs = runs.map((info, i) => new Run(i, info, parent));
  for (const r of objs) {
    try { await r.loadRecords(); await r.refresh(); } catch (e) { setConn('down'); }
    r.openEvents();
  }
  document.body.setAttribute('data-ready', '1');
  setInterval(async () => {
    document.getElementById('clock').textContent = new Date().toLocaleTimeString();
    for (const r of objs) {
      try { await r.refresh(); if (!r.sse) setConn('live'); } catch (e) { setConn('down'); }
    }
  }, 2000);
}

main();
