// SPDX-License-Identifier: Apache-2.0

/// `/static/console.css`: served from the binary, so the console needs no files beside it.
/// Usable from 390 px wide: wide tables scroll inside their box.
enum ConsoleStylesheet {
    static let css = """
        :root { --fg: #1d2330; --muted: #5c6577; --line: #d9dde5; --bg: #f6f7f9; --accent: #2456c6; --bad: #b3261e; --ok: #1b7f3b; --warn: #9a6700; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: var(--fg); background: var(--bg); }
        a { color: var(--accent); }
        header.top { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 20px; padding: 10px 20px; background: #182033; color: #fff; }
        header.top a { color: #dfe6f5; text-decoration: none; }
        header.top .brand { font-weight: 700; color: #fff; font-size: 17px; }
        header.top nav { display: flex; flex-wrap: wrap; gap: 4px 16px; flex: 1; }
        header.top nav a[aria-current] { color: #fff; border-bottom: 2px solid #7fa6ff; }
        header.top .logout button { background: transparent; color: #dfe6f5; border: 1px solid #53607a; }
        main { padding: 16px 20px 40px; max-width: 1200px; margin: 0 auto; }
        h1 { font-size: 22px; margin: 4px 0 16px; }
        h2 { font-size: 17px; margin: 24px 0 8px; }
        .banner { margin: 0; padding: 6px 20px; background: #fff4d6; color: var(--warn); }
        .notice { margin: 12px 20px 0; padding: 8px 12px; background: #e5f4ea; border: 1px solid #b7dfc3; border-radius: 6px; }
        .error { color: var(--bad); }
        .muted, .hint { color: var(--muted); }
        .card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; margin: 0 0 16px; }
        .login { max-width: 420px; }
        .login input { display: block; width: 100%; margin: 6px 0 12px; }
        .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(230px, 1fr)); gap: 12px; }
        .stat { font-size: 26px; font-weight: 600; }
        .scroll { overflow-x: auto; background: #fff; border: 1px solid var(--line); border-radius: 8px; }
        table { border-collapse: collapse; width: 100%; font-size: 14px; }
        th, td { text-align: left; padding: 7px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { background: #eef1f6; font-weight: 600; white-space: nowrap; }
        .num { text-align: right; font-variant-numeric: tabular-nums; }
        code, pre { font: 13px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
        pre { background: #0f1522; color: #e8edf7; padding: 12px; border-radius: 8px; overflow-x: auto; max-height: 480px; }
        .secret { display: inline-block; padding: 6px 8px; background: #fff4d6; border-radius: 4px; word-break: break-all; }
        input, select, button { font: inherit; padding: 6px 10px; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
        button { cursor: pointer; background: var(--accent); color: #fff; border-color: var(--accent); }
        button.danger { background: var(--bad); border-color: var(--bad); }
        button.quiet { background: #fff; color: var(--accent); }
        form.inline { display: inline; }
        form.filters { display: flex; flex-wrap: wrap; gap: 8px; align-items: end; margin-bottom: 12px; }
        form.filters label { display: flex; flex-direction: column; font-size: 13px; color: var(--muted); }
        .actions { display: flex; flex-wrap: wrap; gap: 8px; margin: 8px 0 16px; }
        .pill { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; background: #eef1f6; }
        .pill.good { background: #e5f4ea; color: var(--ok); }
        .pill.bad { background: #fde8e7; color: var(--bad); }
        .pill.warn { background: #fff4d6; color: var(--warn); }
        svg.chart { width: 100%; height: 120px; display: block; }
        svg.chart .done { fill: #5b8def; }
        svg.chart .failed { fill: #e0605a; }
        svg.chart .axis { stroke: var(--line); }
        .legend span { margin-right: 12px; font-size: 13px; color: var(--muted); }
        .legend .done::before, .legend .failed::before { content: ""; display: inline-block; width: 10px; height: 10px; margin-right: 4px; border-radius: 2px; }
        .legend .done::before { background: #5b8def; }
        .legend .failed::before { background: #e0605a; }
        ul.timeline { list-style: none; padding: 0; margin: 0; }
        ul.timeline li { background: #fff; border: 1px solid var(--line); border-left: 4px solid var(--accent); border-radius: 6px; padding: 8px 12px; margin-bottom: 8px; }
        ul.timeline li.stale, ul.timeline li.recorded { border-left-color: #a3acbd; }
        ul.timeline li.dead { border-left-color: var(--bad); }
        ul.timeline li.pending, ul.timeline li.running { border-left-color: var(--warn); }
        ul.timeline .when { color: var(--muted); font-size: 13px; }
        @media (max-width: 600px) { main { padding: 12px; } th, td { padding: 6px; } .stat { font-size: 22px; } }
        """
}
