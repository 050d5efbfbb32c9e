// SPDX-License-Identifier: Apache-2.0

/// The dead letters: a filtered list with bulk replay and discard, and one item with its payload,
/// decoded Apple claims and every attempt.
enum DeadLetterTemplates {
    static let list = """
        {{<layout}}{{$body}}
        <form method="get" action="/dead-letters" class="filters">
          <label>queue<select name="queue"><option value="">both</option>{{#queueOptions}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{value}}</option>{{/queueOptions}}</select></label>
          <label>source<select name="source"><option value="">any</option>{{#sourceOptions}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{value}}</option>{{/sourceOptions}}</select></label>
          <label>type<input name="type" value="{{type}}" placeholder="charge.refunded"></label>
          <label>since<input name="since" value="{{since}}" placeholder="3d or RFC 3339"></label>
          <button type="submit" class="quiet">Filter</button>
        </form>
        {{#filterError}}<p class="error" role="alert">{{filterError}}</p>{{/filterError}}
        {{^readOnly}}{{#hasItems}}
        <div class="actions">
          <form method="post" action="/dead-letters/replay" class="inline">
            <input type="hidden" name="csrf" value="{{csrf}}">{{#filterFields}}<input type="hidden" name="{{name}}" value="{{value}}">{{/filterFields}}
            <button type="submit">Replay all {{count}} shown</button></form>
          <form method="post" action="/dead-letters/discard" class="inline">
            <input type="hidden" name="csrf" value="{{csrf}}">{{#filterFields}}<input type="hidden" name="{{name}}" value="{{value}}">{{/filterFields}}
            <button type="submit" class="danger">Discard all {{count}} shown</button></form>
        </div>
        {{/hasItems}}{{/readOnly}}
        {{^hasItems}}<p class="muted" id="empty">No dead letters{{#filtered}} match these filters{{/filtered}}.</p>{{/hasItems}}
        {{#hasItems}}
        <div class="scroll"><table id="dead-letters">
          <tr><th>item</th><th>source</th><th>type</th><th class="num">attempts</th><th>died</th><th>last error</th></tr>
          {{#items}}<tr><td><a href="/dead-letters/{{queue}}/{{number}}">{{id}}</a></td><td>{{source}}</td><td>{{type}}</td>
          <td class="num">{{attempts}}</td><td>{{failedAt}}</td><td>{{lastError}}</td></tr>{{/items}}
        </table></div>
        {{/hasItems}}
        {{/body}}{{/layout}}
        """

    static let detail = """
        {{<layout}}{{$body}}
        <div class="card">
          <p><span class="pill {{stateClass}}">{{state}}</span> {{source}} · {{type}} · <code>{{externalID}}</code></p>
          <p class="muted">received {{receivedAt}} · {{attempts}} attempts{{#failedAt}} · died {{failedAt}}{{/failedAt}}</p>
          {{#lastError}}<p class="error">{{lastError}}</p>{{/lastError}}
          {{#summary}}<p class="muted">{{key}}: {{value}}</p>{{/summary}}
          {{^readOnly}}{{#isDead}}
          <div class="actions">
            <form method="post" action="/dead-letters/{{queue}}/{{number}}/replay" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit" id="replay">Replay</button></form>
            <form method="post" action="/dead-letters/{{queue}}/{{number}}/discard" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit" class="danger">Discard</button></form>
          </div>
          {{/isDead}}{{/readOnly}}
        </div>
        <h2>Attempts</h2>
        {{^history}}<p class="muted">No failed attempt recorded.</p>{{/history}}
        {{#hasHistory}}<div class="scroll"><table>
          <tr><th class="num">#</th><th>finished</th><th>worker</th><th>HTTP</th><th class="num">ms</th><th>error</th></tr>
          {{#history}}<tr><td class="num">{{attempt}}</td><td>{{finishedAt}}</td><td>{{worker}}</td><td>{{httpStatus}}</td><td class="num">{{duration}}</td><td>{{error}}</td></tr>{{/history}}
        </table></div>{{/hasHistory}}
        {{#claims}}<h2>Decoded claims <span class="muted">(the JWS payloads, decoded for reading; verified when it was received)</span></h2><pre>{{claims}}</pre>{{/claims}}
        <h2>Payload, as stored</h2>
        <pre>{{payload}}</pre>
        {{/body}}{{/layout}}
        """
}
