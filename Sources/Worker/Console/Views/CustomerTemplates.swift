// SPDX-License-Identifier: Apache-2.0

/// A customer: the search box, their entitlements with `is_active` and why, the ledger, and the
/// timeline of every event that touched them; reconcile and rebuild (dry run first).
enum CustomerTemplates {
    static let search = """
        {{<layout}}{{$body}}
        <form method="get" action="/customers" class="filters">
          <label>user id, email, Apple originalTransactionId, Stripe customer or subscription id
          <input name="q" value="{{query}}" size="40" required></label>
          <button type="submit">Look up</button>
        </form>
        {{#searched}}{{^matches}}<p class="muted" id="no-match">Nothing is stored about “{{query}}”.</p>{{/matches}}{{/searched}}
        {{#hasMatches}}<p>“{{query}}” names several customers:</p>
        <ul>{{#matches}}<li><a href="/customer?id={{reference}}">{{label}}</a></li>{{/matches}}</ul>{{/hasMatches}}
        {{/body}}{{/layout}}
        """

    static let customer = """
        {{<layout}}{{$body}}
        {{^readOnly}}
        <div class="actions">
          <form method="post" action="/customer/reconcile" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="id" value="{{subject}}"><button type="submit" class="quiet">Reconcile now</button></form>
          <form method="post" action="/customer/rebuild" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="id" value="{{subject}}"><button type="submit" class="quiet">Rebuild (dry run first)</button></form>
        </div>
        {{/readOnly}}
        <h2>Entitlements</h2>
        <div class="scroll"><table id="entitlements">
          <tr><th>product</th><th>access</th><th>why</th><th>status</th><th>environment</th><th>expires</th><th>entity</th></tr>
          {{#entitlements}}<tr><td>{{product}}</td><td><span class="pill {{activeClass}}">{{active}}</span></td><td>{{why}}</td>
          <td>{{status}}</td><td>{{environment}}</td><td>{{expires}}</td><td><code>{{entity}}</code></td></tr>{{/entitlements}}
        </table></div>
        {{#hasBalances}}<h2>Balances</h2>
        <p id="balances">{{#balances}}<span class="pill">{{currency}} {{amount}}</span> {{/balances}}</p>
        <div class="scroll"><table id="balance-changes">
          <tr><th>time</th><th>cause</th><th>moved</th><th>reason</th><th>by</th></tr>
          {{#balanceChanges}}<tr><td>{{time}}</td><td>{{cause}}</td><td>{{moved}}{{#shortfall}} <span class="muted">(could not take {{shortfall}})</span>{{/shortfall}}{{#expires}} <span class="muted">(expires {{expires}})</span>{{/expires}}</td>
          <td>{{reason}}</td><td>{{actor}}</td></tr>{{/balanceChanges}}
        </table></div>{{/hasBalances}}
        <h2>Ledger</h2>
        {{^transactions}}<p class="muted">No transactions.</p>{{/transactions}}
        {{#hasTransactions}}<div class="scroll"><table>
          <tr><th>transaction</th><th>product</th><th>status</th><th class="num">amount</th><th>purchased</th></tr>
          {{#transactions}}<tr><td><code>{{id}}</code></td><td>{{product}}</td><td>{{status}}</td><td class="num">{{amount}}</td><td>{{purchased}}</td></tr>{{/transactions}}
        </table></div>{{/hasTransactions}}
        <h2>Timeline <span class="muted">(newest first)</span></h2>
        <ul class="timeline" id="timeline">
        {{#timeline}}<li class="{{decision}}">
          <div class="when">{{time}} · {{source}} · {{origin}}{{#event}} · <a href="/dead-letters/{{event}}">{{event}}</a>{{/event}}</div>
          <div><strong>{{type}}</strong>{{#subtype}} / {{subtype}}{{/subtype}} → <span class="pill">{{decision}}</span>{{#detail}} <span class="muted">{{detail}}</span>{{/detail}}</div>
          {{#outgoing}}<div class="muted">sent {{type}} #{{sequence}}{{#deliveries}} · {{text}}{{/deliveries}}</div>{{/outgoing}}
        </li>{{/timeline}}
        </ul>
        {{/body}}{{/layout}}
        """

    /// What a rebuild would change (dry run), with the button that applies it.
    static let rebuild = """
        {{<layout}}{{$body}}
        <div class="card">
          <p>{{summary}}</p>
          {{#changes}}<p><code>{{entity}}</code> ({{events}} events): {{^differences}}unchanged{{/differences}}</p>
          <ul>{{#differences}}<li>{{.}}</li>{{/differences}}</ul>{{/changes}}
          {{#dryRun}}{{#anyChange}}
          <form method="post" action="/customer/rebuild">
            <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="id" value="{{subject}}"><input type="hidden" name="confirm" value="yes">
            <button type="submit" class="danger">Apply this rebuild</button>
          </form>{{/anyChange}}{{/dryRun}}
          <p><a href="/customer?id={{subjectQuery}}">Back to the customer</a></p>
        </div>
        {{/body}}{{/layout}}
        """
}
