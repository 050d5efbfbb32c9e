// SPDX-License-Identifier: Apache-2.0

/// The endpoints with their health, and one endpoint's recent deliveries and actions.
enum EndpointTemplates {
    static let list = """
        {{<layout}}{{$body}}
        {{^endpoints}}<p class="muted">No endpoints. Add one with <code>worker endpoints add URL</code>.</p>{{/endpoints}}
        {{#hasEndpoints}}<div class="scroll"><table id="endpoints">
          <tr><th>endpoint</th><th>url</th><th>receives</th><th>health</th><th class="num">waiting</th><th class="num">dead</th></tr>
          {{#endpoints}}<tr><td><a href="/endpoints/{{id}}">{{name}}</a> {{description}}</td><td><code>{{url}}</code></td><td>{{receives}}</td>
          <td><span class="pill {{healthClass}}">{{health}}</span></td><td class="num">{{waiting}}</td><td class="num">{{dead}}</td></tr>{{/endpoints}}
        </table></div>{{/hasEndpoints}}
        {{/body}}{{/layout}}
        """

    /// The card is drawn inside `{{#endpoint}}`: the row's names first, then the page's.
    static let detail = """
        {{<layout}}{{$body}}
        {{#endpoint}}<div class="card">
          <p><span class="pill {{healthClass}}">{{health}}</span> <code>{{url}}</code> {{description}}</p>
          <p class="muted">receives {{receives}} · sources {{sources}} · environment {{environment}} · rate limit {{rateLimit}}</p>
          {{^readOnly}}
          <div class="actions">
            {{#enabled}}<form method="post" action="/endpoints/{{id}}/disable" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit" class="danger">Disable</button></form>{{/enabled}}
            {{^enabled}}<form method="post" action="/endpoints/{{id}}/enable" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit">Enable</button></form>{{/enabled}}
            <form method="post" action="/endpoints/{{id}}/rotate-secret" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit" class="quiet">Rotate secret (24 h grace)</button></form>
          </div>
          <form method="post" action="/endpoints/{{id}}/resend" class="filters">
            <input type="hidden" name="csrf" value="{{csrf}}">
            <label>resend since<input name="since" required placeholder="1h, 3d or RFC 3339"></label>
            <label>until<input name="until" placeholder="now"></label>
            <label><span>only failed</span><input type="checkbox" name="failed_only" value="yes"></label>
            <button type="submit" class="quiet">Resend…</button>
          </form>
          {{/readOnly}}
        </div>{{/endpoint}}
        <h2>Recent deliveries</h2>
        {{^deliveries}}<p class="muted">None yet.</p>{{/deliveries}}
        {{#hasDeliveries}}<div class="scroll"><table id="deliveries">
          <tr><th>delivery</th><th>event</th><th>state</th><th>HTTP</th><th class="num">attempts</th><th class="num">latency</th><th>created</th><th>last error</th></tr>
          {{#deliveries}}<tr><td>{{id}}</td><td>{{type}} <code>{{message}}</code></td><td><span class="pill {{stateClass}}">{{state}}</span></td>
          <td>{{status}}</td><td class="num">{{attempts}}</td><td class="num">{{latency}}</td><td>{{created}}</td><td>{{lastError}}</td></tr>{{/deliveries}}
        </table></div>{{/hasDeliveries}}
        {{/body}}{{/layout}}
        """
}
