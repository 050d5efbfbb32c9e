// SPDX-License-Identifier: Apache-2.0
import Hummingbird
import Mustache
import NIOCore

/// Renders console pages with swift-mustache: each page template fills the layout's `body`
/// block; `{{…}}` escapes HTML, so stored text (payloads, errors, user ids) is shown, never run.
struct ConsoleRenderer: Sendable {
    /// The console's sections, in the navigation bar's order.
    enum Section: String, CaseIterable, Sendable {
        case overview = "Overview", deadLetters = "Dead letters", customers = "Customers", endpoints = "Endpoints", products = "Products"

        var href: String {
            switch self {
            case .overview: "/"
            case .deadLetters: "/dead-letters"
            case .customers: "/customers"
            case .endpoints: "/endpoints"
            case .products: "/products"
            }
        }
    }

    private let library: MustacheLibrary
    let readOnly: Bool
    let keys: OperatorKeys

    init(readOnly: Bool, keys: OperatorKeys) throws {
        var library = MustacheLibrary()
        let templates: [String: String] = [
            "layout": LayoutTemplates.layout, "login": LayoutTemplates.login, "confirm": LayoutTemplates.confirm,
            "message": LayoutTemplates.message, "overview": OverviewTemplate.template, "dead-letters": DeadLetterTemplates.list,
            "dead-letter": DeadLetterTemplates.detail, "customers": CustomerTemplates.search, "customer": CustomerTemplates.customer,
            "rebuild": CustomerTemplates.rebuild, "endpoints": EndpointTemplates.list, "endpoint": EndpointTemplates.detail,
            "products": ProductTemplates.list,
        ]
        for (name, text) in templates { try library.register(text, named: name) }
        self.library = library
        self.readOnly = readOnly
        self.keys = keys
    }

    /// A whole page: `values` for the template, plus what the layout needs (title, navigation,
    /// the session's CSRF token, read-only, a notice from the query string).
    func page(
        _ template: String, title: String, section: Section?, request: Request, context: ConsoleRequestContext,
        values: [String: Any] = [:], status: HTTPResponse.Status = .ok
    ) -> Response {
        var all = values
        all["title"] = title
        all["readOnly"] = readOnly
        if let session = context.session {
            all["signedIn"] = true
            all["csrf"] = session.csrfToken(keys: keys)
            all["nav"] = Section.allCases.map { ["href": $0.href, "label": $0.rawValue, "current": $0 == section] as [String: Any] }
        }
        if all["notice"] == nil, let notice = request.uri.queryParameters.get("notice") { all["notice"] = notice }
        let html = library.render(Self.droppingBlanks(all), withTemplate: template) ?? "template \(template) is missing"
        return Self.html(html, status: status)
    }

    /// `values` without its empty strings, at every depth: Mustache counts `""` as true, so
    /// `{{#detail}}…{{/detail}}` would show a section for an empty detail.
    static func droppingBlanks(_ values: [String: Any]) -> [String: Any] {
        values.compactMapValues(droppingBlanks(value:))
    }

    private static func droppingBlanks(value: Any) -> Any? {
        switch value {
        case let text as String: text.isEmpty ? nil : text
        case let dictionary as [String: Any]: droppingBlanks(dictionary)
        case let rows as [[String: Any]]: rows.map(droppingBlanks)
        default: value
        }
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// The "are you sure?" page every action shows first: its form again, with `confirm=yes`.
    func confirmation(
        _ request: Request, _ context: ConsoleRequestContext, section: Section?, action: String, question: String, button: String,
        back: String, fields: [(name: String, value: String)] = []
    ) -> Response {
        page(
            "confirm", title: "Confirm", section: section, request: request, context: context,
            values: [
                "action": action, "question": question, "button": button, "back": back,
                "fields": fields.map { ["name": $0.name, "value": $0.value] },
            ])
    }

    /// A `303 See Other` to `location` (after a POST, so that reloading does not post again).
    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location])
    }

    /// Where to go after an action, with its outcome as the notice.
    static func redirect(_ path: String, notice: String) -> Response {
        redirect(path + (path.contains("?") ? "&" : "?") + FormFields.encode([("notice", notice)]))
    }
}
