// SPDX-License-Identifier: Apache-2.0

/// The page frame every console page fills in (`{{<layout}}{{$body}}…{{/body}}{{/layout}}`),
/// and the pages every section shares: sign-in, confirmation, a message.
enum LayoutTemplates {
    static let layout = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        {{#refresh}}<meta http-equiv="refresh" content="{{refresh}}">{{/refresh}}
        <title>{{title}} · Sluice console</title>
        <link rel="stylesheet" href="/static/console.css">
        </head>
        <body>
        <header class="top">
          <a class="brand" href="/">Sluice</a>
          {{#signedIn}}
          <nav>{{#nav}}<a href="{{href}}"{{#current}} aria-current="page"{{/current}}>{{label}}</a>{{/nav}}</nav>
          <form method="post" action="/logout" class="logout"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit">Sign out</button></form>
          {{/signedIn}}
        </header>
        {{#readOnly}}<p class="banner">Read-only console: actions are turned off.</p>{{/readOnly}}
        {{#notice}}<p class="notice" role="status">{{notice}}</p>{{/notice}}
        <main>
        <h1>{{title}}</h1>
        {{$body}}{{/body}}
        </main>
        </body>
        </html>
        """

    static let login = """
        {{<layout}}{{$body}}
        <form method="post" action="/login" class="card login">
          <label for="key">Operator key</label>
          <input id="key" name="key" type="password" autocomplete="current-password" required minlength="32" autofocus>
          {{#error}}<p class="error" role="alert">{{error}}</p>{{/error}}
          <button type="submit">Sign in</button>
          <p class="hint">A key from <code>OPERATOR_KEYS</code>. Sessions end after 30 minutes without a request, and after 12 hours.</p>
        </form>
        {{/body}}{{/layout}}
        """

    /// "Are you sure?": the action's own form again, with `confirm=yes`.
    static let confirm = """
        {{<layout}}{{$body}}
        <div class="card">
          <p>{{question}}</p>
          <form method="post" action="{{action}}">
            <input type="hidden" name="csrf" value="{{csrf}}">
            {{#fields}}<input type="hidden" name="{{name}}" value="{{value}}">{{/fields}}
            <input type="hidden" name="confirm" value="yes">
            <button type="submit" class="danger">{{button}}</button>
            <a href="{{back}}">Cancel</a>
          </form>
        </div>
        {{/body}}{{/layout}}
        """

    /// A result to read once: a new endpoint secret, a refusal.
    static let message = """
        {{<layout}}{{$body}}
        <div class="card">
          {{#lines}}<p>{{.}}</p>{{/lines}}
          {{#secret}}<p><code class="secret">{{secret}}</code></p><p class="muted">Shown once: store it now.</p>{{/secret}}
          <p><a href="{{back}}">Back</a></p>
        </div>
        {{/body}}{{/layout}}
        """
}
