/* envsolve's compatibility explorer: the selector. It holds no compatibility rule: every answer
   is looked up in the tables `envsolve site` computed with envsolve's solver (site-data: their
   JSON deflated and in base64, inflated here by the browser's own DecompressionStream), and the
   texts are the solver's own, with {gpu}, {driver} and {range} filled in. The answer's
   [data-field=reason] elements are the lines `envsolve lock --frameworks-only` prints after
   "cannot be satisfied:" (without "  - "), [data-field=tip] the text after "TIP: ". */
(function () {
  "use strict";
  var node = document.getElementById("site-data");
  if (!node) { return; }
  var D = null, byName = {};
  var $ = function (id) { return document.getElementById(id); };

  /* the embedded data: base64 of the deflated (zlib format) JSON text */
  function inflate(text) {
    var bin = atob(text.trim()), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).text();
  }

  /* the value of a run-length list ([count, value, ...]) at position j */
  function at(runs, j) {
    for (var k = 0; k < runs.length; k += 2) {
      if (j < runs[k]) { return runs[k + 1]; }
      j -= runs[k];
    }
    return runs[runs.length - 1];
  }

  /* a framework's tables for one GPU class and platform, its shared lists looked up */
  function tables(tab, fw) {
    var F = tab.f[fw], blob = function (k) { return F[k] === undefined ? null : D.blobs[F[k]]; };
    return {r: blob("r"), x: blob("x"), xt: blob("xt"), k: blob("k"), b: blob("b"), h: blob("h"), v: F.v, e: F.e};
  }

  /* the release whose refusal tells a refused range: the first in range flagged (h), else the first */
  function told(F, idx) {
    for (var k = 0; k < idx.length; k++) { if (F.h[idx[k]]) { return idx[k]; } }
    return idx[0];
  }

  function fill(text, ctx) {
    return text.split("{gpu}").join(ctx.gpuText).split("{driver}").join(ctx.driver)
      .split("{range}").join(ctx.subject);
  }

  function option(select, value, label) {
    var o = document.createElement("option");
    o.value = value;
    o.textContent = label;
    select.appendChild(o);
  }

  function fillVersions() {
    var fw = $("framework").value;
    ["version-min", "version-max"].forEach(function (id) {
      var select = $(id), keep = select.value;
      select.textContent = "";
      option(select, "", "any");
      D.frameworks[fw].releases.forEach(function (r) { option(select, r, r); });
      select.value = D.frameworks[fw].releases.indexOf(keep) >= 0 ? keep : "";
    });
  }

  function read() {
    var name = $("gpu").value.trim(), fw = $("framework").value;
    var lo = $("version-min").value, hi = $("version-max").value;
    var raw = [lo ? ">=" + lo : "", hi ? "<=" + hi : ""].filter(Boolean).join(",") || "*";
    var gpu = gpuOf(name);
    return {name: name, gpu: gpu, driver: $("driver").value, platform: $("platform").value, fw: fw,
            lo: lo, hi: hi, raw: raw};
  }

  /* A GPU name as the command line reads it (Provider.gpu, whose rules D.resolver exports): case and
     punctuation ignored, a vendor's prefix added or taken off, then a laptop part as the driver names
     it, without the memory size, without the form factor, and a laptop part as its desktop model. */
  function fold(s) { return s.toLowerCase().replace(/[^a-z0-9]/g, ""); }

  function named(name) {
    var R = D.resolver, key = fold(name);
    var tries = [key].concat(R.prefixes.map(function (p) { return fold(p + key); }),
      R.longest.filter(function (p) { return key.indexOf(p) === 0; }).map(function (p) { return key.slice(p.length); }));
    for (var i = 0; i < tries.length; i++) {
      if (byName.hasOwnProperty(tries[i])) { return byName[tries[i]]; }
    }
    return -1;
  }

  function gpuOf(name) {
    var R = D.resolver;
    var laptop = name.replace(new RegExp(R.laptop, "i"), " Laptop GPU");
    var sized = laptop.replace(new RegExp(R.memory, "gi"), "");
    var bare = sized.replace(new RegExp(R.form, "gi"), "");
    var ways = [name, laptop, sized, bare, bare.replace(new RegExp(R.laptop, "i"), "")];
    for (var i = 0; i < ways.length; i++) {
      var found = named(ways[i]);
      if (found >= 0) { return found; }
    }
    return -1;
  }

  /* the releases in range, as indexes into the framework's list (newest first) */
  function inRange(s) {
    var rels = D.frameworks[s.fw].releases;
    var top = s.hi ? rels.indexOf(s.hi) : 0, bottom = s.lo ? rels.indexOf(s.lo) : rels.length - 1;
    var out = [];
    for (var i = top; i <= bottom; i++) { out.push(i); }
    return out;
  }

  /* the release the lock takes: the first (newest) of the lowest rank among those that resolve */
  function pick(F, idx, j, rankOf) {
    var best = -1, low = Infinity;
    idx.forEach(function (i) {
      var r = rankOf(i);
      if (r > 0 && r < low) { best = i; low = r; }
    });
    return best;
  }

  function answer(s) {
    if (s.gpu < 0) {
      return {status: "invalid", error: "unknown GPU " + JSON.stringify(s.name) +
              ": pick a name from the list (or " + D.cpu + ")"};
    }
    var g = D.gpus[s.gpu], p = D.platforms.indexOf(s.platform);
    var bad = g.invalid[(s.driver ? 2 : 0) + p];
    if (bad) { return {status: "invalid", error: D.texts[bad - 1].split("{driver}").join(s.driver)}; }
    var tab = D.tables[D.classes[g.cls][s.platform]], j = s.driver ? D.drivers.indexOf(s.driver) + 1 : 0;
    var ctx = {gpuText: g.text, driver: s.driver, subject: s.fw + " " + s.raw};
    var t = at(tab.t, j);
    if (t) { return refused(D.texts[t - 1], at(tab.tt, j) ? D.texts[at(tab.tt, j) - 1] : "", ctx, tab, s, j); }
    var F = tables(tab, s.fw), idx = inRange(s);
    if (!idx.length) { return refused(D.texts[at(F.e, j)], tip(F, [], s, j, ctx), ctx, tab, s, j); }
    var chosen = pick(F, idx, j, function (i) {
      return at(F.r[i], j) < 0 ? 0 : 1 + (F.k ? at(F.k[i], j) : 0);
    });
    if (chosen >= 0) {
      var a = D.answers[at(F.r[chosen], j)], out = {status: "ok", ctx: ctx, tab: tab, s: s, j: j};
      D.fields.forEach(function (f, k) { out[f] = a[k]; });
      return out;
    }
    return refused(D.texts[-1 - at(F.r[told(F, idx)], j)], tip(F, idx, s, j, ctx), ctx, tab, s, j);
  }

  /* the TIP of a refused range: the versions that work (a range was written), the oldest newer driver */
  function tip(F, idx, s, j, ctx) {
    var fixes = [];
    var v = at(F.v, j);
    if (s.raw !== "*" && v) { fixes.push(fill(D.texts[v - 1], ctx)); }
    var fix = pick(F, idx, j, function (i) { return at(F.x[i], j); });
    if (fix >= 0) { fixes.push(fill(D.texts[at(F.xt[fix], j) - 1], ctx)); }
    return fixes.length ? D.tip.split("{fixes}").join(fixes.join("; ")) : "";
  }

  function refused(lines, tipText, ctx, tab, s, j) {
    return {status: "refused", reasons: fill(lines, ctx).split("\n"), tip: fill(tipText, ctx), ctx: ctx,
            tab: tab, s: s, j: j};
  }

  function cell(tr, text, className) {
    var td = document.createElement("td");
    td.textContent = text;
    if (className) { td.className = className; }
    tr.appendChild(td);
    return td;
  }

  function showAnswer(a) {
    var box = $("answer");
    box.setAttribute("data-status", a.status);
    box.textContent = "";
    var h = document.createElement("h2");
    h.textContent = a.status === "ok" ? "What the lock gives" : a.status === "refused" ?
      "Cannot be satisfied" : "Not a spec envsolve reads";
    box.appendChild(h);
    if (a.status === "ok") {
      var dl = document.createElement("dl");
      D.fields.slice(0, 8).forEach(function (f) {
        var dt = document.createElement("dt"), dd = document.createElement("dd");
        dt.textContent = D.labels[f];
        dd.textContent = a[f];
        dd.setAttribute("data-field", f);
        dl.appendChild(dt);
        dl.appendChild(dd);
      });
      box.appendChild(dl);
    } else if (a.status === "refused") {
      var ul = document.createElement("ul");
      a.reasons.forEach(function (line) {
        var li = document.createElement("li");
        li.textContent = line;
        li.setAttribute("data-field", "reason");
        ul.appendChild(li);
      });
      box.appendChild(ul);
      if (a.tip) {
        var p = document.createElement("p");
        p.className = "tip";
        p.textContent = a.tip;
        p.setAttribute("data-field", "tip");
        box.appendChild(p);
      }
    } else {
      var e = document.createElement("p");
      e.textContent = a.error;
      e.setAttribute("data-field", "error");
      box.appendChild(e);
    }
  }

  function showBuilds(a) {
    var body = $("builds").querySelector("tbody");
    body.textContent = "";
    if (a.status === "invalid") { return; }
    var F = tables(a.tab, a.s.fw), fw = D.frameworks[a.s.fw], j = a.j, t = at(a.tab.t, j);
    inRange(a.s).forEach(function (i) {
      var rel = fw.releases[i];
      var builds = F.b ? fw.builds[i] : ["any"];
      builds.forEach(function (variant, k) {
        var why = "", o;
        if (t) {
          why = fill(D.texts[t - 1], a.ctx).split("\n")[0];
        } else if (F.b) {
          o = at(F.b[i][k], j);
          why = o ? fill(D.texts[o - 1], a.ctx) : "";
        } else {
          o = at(F.r[i], j);
          why = o < 0 ? fill(D.texts[-1 - o], a.ctx).split("\n").join("; ") : "";
        }
        var tr = document.createElement("tr"), chosen = a.status === "ok" && rel === a.release &&
          (variant === a.build || !F.b);
        tr.setAttribute("data-release", rel);
        tr.setAttribute("data-build", variant);
        tr.setAttribute("data-status", why ? "refused" : "ok");
        if (chosen) { tr.className = "chosen"; }
        cell(tr, rel);
        cell(tr, variant);
        cell(tr, why ? "refused" : chosen ? "chosen" : "fits");
        cell(tr, why, "why");
        body.appendChild(tr);
      });
    });
  }

  function showProject(s) {
    var gpu = s.gpu > 0 ? D.gpus[s.gpu].name : "";
    var hw = (gpu ? "gpus = [" + JSON.stringify(gpu) + "]\n" : "") +
      (s.driver ? "driver = " + JSON.stringify(s.driver) + "\n" : "");
    $("project-toml").textContent = "[project]\nname = \"explorer\"\n\n[frameworks]\n" + s.fw + " = " +
      JSON.stringify(s.raw) + "\n\n[hardware]\n" + hw + "platform = " + JSON.stringify(s.platform) + "\n";
    $("commands").textContent = D.commands.join("\n") + "\n";
  }

  function update() {
    var s = read(), a = answer(s);
    showAnswer(a);
    showBuilds(a);
    showProject(s);
  }

  function start(data) {
    D = data;
    D.gpus.forEach(function (g, i) {
      g.names.forEach(function (n) { byName[fold(n)] = i; });
    });
    D.drivers.forEach(function (d) { option($("driver"), d, d); });
    D.platforms.forEach(function (p) { option($("platform"), p, p); });
    Object.keys(D.frameworks).forEach(function (f) { option($("framework"), f, f); });
    var list = $("gpu-names");
    D.gpus.forEach(function (g) { g.names.forEach(function (n) { option(list, n, ""); }); });
    $("framework").value = D.defaults.framework;
    $("gpu").value = $("gpu").value || D.defaults.gpu;
    fillVersions();
    $("framework").addEventListener("change", function () { fillVersions(); update(); });
    ["gpu", "driver", "platform", "version-min", "version-max"].forEach(function (id) {
      $(id).addEventListener("input", update);
      $(id).addEventListener("change", update);
    });
    update();
  }

  /* a browser without DecompressionStream (before Chrome 80, Firefox 113, Safari 16.4) is told so */
  function unreadable() {
    $("answer").textContent = "This browser cannot read the selector's tables (it lacks DecompressionStream); " +
      "the GPU, release and driver pages do not need it.";
  }

  if (typeof DecompressionStream === "undefined") { unreadable(); return; }
  inflate(node.textContent).then(function (text) { start(JSON.parse(text)); }, unreadable);
}());
