// SPDX-License-Identifier: Apache-2.0

/// The overview: both queues' depth and the last hour, recovery, endpoint health. Refreshes itself.
enum OverviewTemplate {
    static let template = """
        {{<layout}}{{$body}}
        <div class="grid">
        {{#queues}}
          <section class="card queue" id="queue-{{name}}">
            <h2>{{name}} {{#paused}}<span class="pill warn">paused</span>{{/paused}}</h2>
            <p><span class="stat">{{pending}}</span> pending · {{running}} running ·
               <a href="/dead-letters?queue={{name}}">{{dead}} dead</a></p>
            <p class="muted">oldest runnable waits {{oldestAge}}</p>
            <p class="muted">last hour: {{doneLastHour}} done, {{failedLastHour}} failed attempts</p>
            {{{chart}}}
            <p class="legend"><span class="done">done</span><span class="failed">failed attempts</span> per 5 minutes</p>
          </section>
        {{/queues}}
        </div>
        <h2>Recovery</h2>
        {{^checkpoints}}<p class="muted">No recovery stream has run (no provider API credentials, or not yet).</p>{{/checkpoints}}
        {{#hasCheckpoints}}
        <div class="scroll"><table>
          <tr><th>stream</th><th>checkpoint</th><th>lag</th><th>last success</th><th>last error</th></tr>
          {{#checkpoints}}<tr><td>{{stream}}</td><td>{{checkpoint}}</td><td>{{lag}}</td><td>{{lastSuccess}}</td><td>{{lastError}}</td></tr>{{/checkpoints}}
        </table></div>
        {{/hasCheckpoints}}
        <h2>Endpoints</h2>
        {{^endpoints}}<p class="muted">No endpoints. Add one with <code>worker endpoints add URL</code>.</p>{{/endpoints}}
        {{#hasEndpoints}}
        <div class="scroll"><table>
          <tr><th>endpoint</th><th>health</th><th class="num">waiting</th><th class="num">dead</th></tr>
          {{#endpoints}}<tr><td><a href="/endpoints/{{id}}">{{name}}</a> {{description}}</td>
          <td><span class="pill {{healthClass}}">{{health}}</span></td><td class="num">{{waiting}}</td><td class="num">{{dead}}</td></tr>{{/endpoints}}
        </table></div>
        {{/hasEndpoints}}
        <p class="muted">Refreshes every {{refresh}} seconds · {{generatedAt}}</p>
        {{/body}}{{/layout}}
        """
}
