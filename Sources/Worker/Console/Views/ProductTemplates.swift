// SPDX-License-Identifier: Apache-2.0

/// The products page: the catalog as `worker products list` shows it.
enum ProductTemplates {
    static let list = """
        {{<layout}}{{$body}}
        {{^products}}<p class="muted">No products. Add one with <code>worker products add ID --type … --access-levels pro</code> (docs/catalog.md).</p>{{/products}}
        {{#hasProducts}}<div class="scroll"><table id="products">
          <tr><th>product</th><th>type</th><th>access levels</th><th>Stripe price</th><th>App Store ids</th><th class="num">trial days</th><th>state</th></tr>
          {{#products}}<tr><td><code>{{id}}</code></td><td>{{type}}</td><td>{{accessLevels}}</td><td><code>{{stripePrice}}</code></td>
          <td>{{appleProductIDs}}</td><td class="num">{{trialDays}}</td><td><span class="pill {{stateClass}}">{{state}}</span></td></tr>{{/products}}
        </table></div>{{/hasProducts}}
        <p class="muted">Changed with <code>worker products add|update|archive</code>; the read API and checkouts see a change at once, outgoing events within 30 s.</p>
        {{/body}}{{/layout}}
        """
}
