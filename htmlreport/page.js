// The page's script: it reads the session's data (a JSON script element) and builds the
// detail of the turn chosen on the timeline. Every text from the session goes into the page
// through textContent, never as markup.
(function () {
	'use strict';
	var D = JSON.parse(document.getElementById('data').textContent);
	var turns = D.turns, msgs = D.msgs, comps = D.comps || [];
	var colors = ['#6a51a3', '#9e9ac8', '#bcbddc', '#2171b5', '#6baed6', '#c6dbef', '#238b45', '#74c476',
		'#fd8d3c', '#bdbdbd', '#fdd0a2', '#f7f7f7', '#fee0d2'];
	var detail = document.getElementById('detail');
	var svg = document.getElementById('tl');
	var current = -1;

	function el(tag, cls, text) {
		var e = document.createElement(tag);
		if (cls) { e.className = cls; }
		if (text !== undefined && text !== null) { e.textContent = String(text); }
		return e;
	}
	function add(parent, tag, cls, text) { var e = el(tag, cls, text); parent.appendChild(e); return e; }
	function num(n) { return n === undefined || n === null ? '–' : Number(n).toLocaleString('en-US'); }
	function usd(n) { return n === undefined || n === null ? '–' : '$' + Number(n).toFixed(4); }
	function sum(a) { var s = 0; for (var i = 0; i < a.length; i++) { s += a[i]; } return s; }

	// messagesOf rebuilds the message list of turn i: each turn keeps the first k messages of
	// the turn before and adds its own, so the walk back takes each message once.
	function messagesOf(i) {
		if (i < 0) { return []; }
		var pieces = [turns[i].a || []], need = turns[i].k;
		for (var j = i - 1; j >= 0 && need > 0; j--) {
			var t = turns[j];
			if (need > t.k) { pieces.push((t.a || []).slice(0, need - t.k)); need = t.k; }
		}
		var out = [];
		for (var p = pieces.length - 1; p >= 0; p--) { out = out.concat(pieces[p]); }
		return out;
	}

	function table(parent, cls, head, rows) {
		var t = add(parent, 'table', cls);
		if (head) {
			var tr = add(add(t, 'thead'), 'tr');
			head.forEach(function (h) { add(tr, 'th', null, h); });
		}
		var tb = add(t, 'tbody');
		rows.forEach(function (r) {
			var tr = add(tb, 'tr');
			r.forEach(function (c, k) { add(tr, k === 0 && cls === 'figures' ? 'th' : 'td', null, c); });
		});
		return t;
	}

	function firstLine(s) {
		s = s || '';
		var m = s.replace(/^\s+/, '').split('\n')[0];
		return m.length > 120 ? m.slice(0, 120) + '…' : m;
	}

	// message draws one request message; its blocks are drawn when it is opened.
	function message(parent, id, pos) {
		var m = msgs[id];
		var d = add(parent, 'details', 'msg ' + m.r);
		var s = add(d, 'summary');
		var origins = {};
		var preview = '';
		m.b.forEach(function (b) {
			if (b.o) { origins[b.o] = true; }
			if (!preview) { preview = (b.name ? b.name + ' ' : '') + firstLine(b.t); }
		});
		s.appendChild(document.createTextNode('#' + (pos + 1) + ' ' + m.r + ' · ' + num(m.n) + ' tokens · ' +
			m.b.map(function (b) { return b.k; }).join(', ')));
		Object.keys(origins).forEach(function (o) { add(s, 'span', 'origin o-' + o, o); });
		s.appendChild(document.createTextNode(' ' + preview));
		d.addEventListener('toggle', function () {
			if (!d.open || d.dataset.drawn) { return; }
			d.dataset.drawn = '1';
			m.b.forEach(function (b) {
				var div = add(d, 'div', 'block');
				var head = b.k + (b.name ? ' ' + b.name : '') + (b.id ? ' ' + b.id : '') + (b.err ? ' (error)' : '') +
					' · ' + num(b.n) + ' tokens' + (b.full ? ' · cut from ' + num(b.full) + ' characters' : '');
				var h = add(div, 'div', 'head', head);
				add(h, 'span', 'origin' + (b.o ? ' o-' + b.o : ''), b.o || 'as written');
				add(div, 'pre', null, b.t || '');
			});
		});
		return d;
	}

	function messageList(parent, ids) {
		ids.forEach(function (id, pos) { message(parent, id, pos); });
	}

	function grid(parent, t) {
		var cells = 200, total = Math.max(D.window, sum(t.parts.slice(0, 10)) + t.parts[11] + t.parts[12]);
		var order = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12];
		var g = add(parent, 'div', 'grid');
		var cum = [], acc = 0;
		order.forEach(function (k) { acc += t.parts[k]; cum.push(acc); });
		var k = 0;
		for (var c = 0; c < cells; c++) {
			var at = (c + 0.5) * total / cells;
			while (k < order.length - 1 && cum[k] < at) { k++; }
			var i = add(g, 'i');
			i.style.background = colors[order[k]];
			i.title = D.parts[order[k]];
		}
	}

	function show(i) {
		if (i < 0 || i >= turns.length) { return; }
		current = i;
		var t = turns[i];
		document.getElementById('turn').value = t.n;
		if (history.replaceState) { history.replaceState(null, '', '#turn-' + t.n); }
		var sel = document.getElementById('selected');
		var x = +svg.dataset.left + (i + 0.5) * +svg.dataset.plot / turns.length;
		sel.setAttribute('x1', x); sel.setAttribute('x2', x); sel.setAttribute('visibility', 'visible');

		detail.textContent = '';
		add(detail, 'h2', null, 'Turn ' + t.n + (t.time ? ' · ' + t.time : '') + (t.line ? ' · line ' + t.line : ''));
		if (t.uuid) { add(detail, 'p', 'sub', 'response ' + t.uuid); }
		if (t.err) { add(detail, 'p', 'error', 'Not sent: ' + t.err); }
		if (t.mk) { add(detail, 'p', 'sub', 'decisions: ' + t.mk.join(', ')); }

		var cols = add(detail, 'div', 'cols');
		var left = add(cols, 'div'), right = add(cols, 'div');
		add(left, 'h3', null, 'The request');
		var real = t.real, u = t.use;
		table(left, 'figures', ['', 'policy (simulated)', 'real (the file)'], [
			['input tokens', num(t.in), real ? num(real[0] + real[1] + real[2] + real[3]) : '–'],
			['pressure figure', num(t.p), ''],
			['max_tokens', num(t.max), ''],
			['cache read', num(u[3]), real ? num(real[3]) : '–'],
			['cache write 5m', num(u[1]), real ? num(real[1]) : '–'],
			['cache write 1h', num(u[2]), real ? num(real[2]) : '–'],
			['uncached', num(u[0]), real ? num(real[0]) : '–'],
			['output', num(u[4]), real ? num(real[4]) : '–'],
			['cost', usd(t.cost), real ? usd(t.rcost) : '–']
		]);
		if (t.exp) { add(left, 'p', 'sub', 'The prompt cache expired before this request (an idle gap over its time to live).'); }

		add(right, 'h3', null, 'The window by part (each square ' + num(Math.round(D.window / 200)) + ' tokens)');
		grid(right, t);
		var rows = [];
		t.parts.forEach(function (n, k) {
			if (n > 0) { rows.push([D.parts[k], num(n), (100 * n / D.window).toFixed(1) + '%']); }
		});
		table(right, 'figures', ['part', 'tokens', 'of the window'], rows);
		if (real) {
			var r = real[0] + real[1] + real[2] + real[3];
			add(right, 'p', 'sub', 'Counted ' + num(t.in) + ' tokens; the provider reported ' + num(r) +
				' for the request really sent' + (r > 0 ? ' (counted ÷ reported ' + (t.in / r).toFixed(3) + ')' : '') +
				'. The simulated request may differ from the one sent when the policy decided otherwise.');
		}

		add(detail, "h3", null, "What the stages did (those that did something)");
		table(detail, 'list', ['stage', 'actions', 'tokens freed'], (t.st || []).map(function (s) {
			return [s.s, num(s.n), num(s.f || 0)];
		}));
		if (t.acts) {
			var d = add(detail, 'details');
			add(d, 'summary', null, t.acts.length + ' actions' + (t.more ? ' (and ' + t.more + ' not listed: cache markers and past 200)' : ''));
			table(d, 'list', ['stage', 'action', 'record', 'tool call', 'tokens', 'detail'], t.acts.map(function (a) {
				return [a.s, a.k, a.u || a.r || '', a.t || '', a.n ? num(a.n) : '', a.d || ''];
			}));
		}
		if (t.deg) {
			add(detail, 'h3', null, 'Short of the policy');
			var ul = add(detail, 'ul');
			t.deg.forEach(function (x) { add(ul, 'li', null, x); });
		}
		if (t.comp) { compaction(comps[t.comp - 1], i); }

		var ids = messagesOf(i);
		add(detail, 'h3', null, 'The request\'s ' + ids.length + ' messages');
		add(detail, 'p', 'sub', 'Open a message to read it. A tag says where a block came from when it is not the transcript as written.');
		messageList(add(detail, 'div', 'msgs'), ids);
	}

	function compaction(c, i) {
		add(detail, 'h3', null, 'Compaction: ' + c.outcome + ' (' + c.trigger + ')');
		if (c.reason) { add(detail, 'p', null, c.reason); }
		table(detail, 'figures', null, [
			['pressure before → after', num(c.pre) + ' → ' + num(c.post)],
			['floor', num(c.floor)],
			['rung', c.rung || '–'],
			['summarizer', (c.summarizer || '–') + (c.fallback ? ' (fallback: ' + c.fallback + ')' : '')],
			['messages summarized (left out to fit)', num(c.summarized) + ' (' + num(c.omitted || 0) + ')'],
			['kept tail', num(c.kept) + ' records, ' + num(c.keptTokens) + ' tokens'],
			['re-read', (c.rehydrated || []).join(', ') || 'nothing'],
			['attempts', num(c.attempts) + ((c.failures || []).length ? ': ' + c.failures.join('; ') : '')],
			['breaker', c.breaker ? 'open after ' + c.consecutiveFailures + ' failures' : 'closed'],
			['thrash', c.thrash ? (c.aggressive ? 'yes: aggressive' : 'yes') : 'no']
		]);
		if (c.facts) {
			var n = { summary: 0, kept: 0, lost: 0 };
			c.facts.forEach(function (f) { n[f.w || 'lost']++; });
			add(detail, 'h3', null, 'What the summary kept by name: ' + n.summary + ' in the summary, ' + n.kept +
				' in the kept part, ' + n.lost + ' lost, of ' + c.facts.length);
			var t = add(detail, 'table', 'list'), tb = add(t, 'tbody');
			c.facts.forEach(function (f) {
				var tr = add(tb, 'tr');
				add(tr, 'td', null, f.k);
				add(tr, 'td', null, f.t);
				add(tr, 'td', 'w-' + (f.w || 'lost'), f.w || 'lost');
			});
		}
		var cols = add(detail, 'div', 'cols');
		var l = add(cols, 'div'), r = add(cols, 'div');
		add(l, 'h3', null, 'The summary');
		add(l, 'pre', 'summary', c.summary || '(none)');
		var before = messagesOf(i - 1);
		add(r, 'h3', null, 'What it replaced: the ' + before.length + ' messages of the request before');
		var box = add(r, 'details');
		add(box, 'summary', null, 'show them');
		box.addEventListener('toggle', function () {
			if (box.open && !box.dataset.drawn) { box.dataset.drawn = '1'; messageList(box, before); }
		});
	}

	// The timeline: a click opens a turn, a move shows which.
	function turnAt(ev) {
		var pt = svg.createSVGPoint();
		pt.x = ev.clientX; pt.y = ev.clientY;
		var p = pt.matrixTransform(svg.getScreenCTM().inverse());
		var i = Math.floor((p.x - +svg.dataset.left) / +svg.dataset.plot * turns.length);
		return { i: Math.max(0, Math.min(turns.length - 1, i)), x: p.x };
	}
	var hit = document.getElementById('hit'), cursor = document.getElementById('cursor'), hover = document.getElementById('hover');
	hit.addEventListener('click', function (ev) { show(turnAt(ev).i); });
	hit.addEventListener('mousemove', function (ev) {
		var a = turnAt(ev), t = turns[a.i];
		cursor.setAttribute('x1', a.x); cursor.setAttribute('x2', a.x); cursor.setAttribute('visibility', 'visible');
		hover.textContent = 'turn ' + t.n + ': ' + num(t.in) + ' tokens, read ' + num(t.use[3]) + ', ' + usd(t.cost) +
			(t.mk ? ' · ' + t.mk.join(', ') : '');
	});
	hit.addEventListener('mouseleave', function () { cursor.setAttribute('visibility', 'hidden'); hover.textContent = ''; });
	document.getElementById('prev').addEventListener('click', function () { show(current - 1); });
	document.getElementById('next').addEventListener('click', function () { show(current + 1); });
	document.getElementById('turn').addEventListener('change', function (ev) { show(+ev.target.value - 1); });
	document.addEventListener('keydown', function (ev) {
		if (ev.target.tagName === 'INPUT' || ev.target.tagName === 'SELECT') { return; }
		if (ev.key === 'ArrowLeft') { show(current - 1); }
		if (ev.key === 'ArrowRight') { show(current + 1); }
	});
	var jump = document.getElementById('jump');
	var listed = 0;
	turns.forEach(function (t, i) {
		if (!t.mk || listed >= 1000) { return; }
		listed++;
		var o = add(jump, 'option', null, 'turn ' + t.n + ': ' + t.mk.join(', '));
		o.value = String(i);
	});
	jump.addEventListener('change', function () { if (jump.value !== '') { show(+jump.value); } });

	// The first turn shown: the one the address names, else the first compaction, else the last.
	var start = turns.length - 1;
	var m = /^#turn-(\d+)$/.exec(location.hash);
	if (m) { start = +m[1] - 1; } else if (comps.length) { start = comps[0].turn - 1; }
	show(start);
})();
