// SPDX-License-Identifier: Apache-2.0
import Hummingbird
import Logging
import Mustache
import NIOCore

/// Renders console pages with swift-mustache: each page's template fills the layout's `body`
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

    /// - Parameter templates: the templates to register; every one the console has, unless a
    ///   test leaves one out to see the page that names it fail.
    init(readOnly: Bool, keys: OperatorKeys, templates: [ConsoleTemplate] = ConsoleTemplate.allCases) throws {
        var library = MustacheLibrary()
        for template in templates { try library.register(template.text, named: template.rawValue) }
        self.library = library
        self.readOnly = readOnly
        self.keys = keys
    }

    /// A whole page: `page` inside the layout, with the title, the navigation, the session's CSRF
    /// token, read-only, and a notice from the query string. A template that is not registered is
    /// a `500` and an error in the log, never an empty `200`.
    func page(
        _ page: some ConsolePage, title: String, section: Section?, request: Request, context: ConsoleRequestContext,
        status: HTTPResponse.Status = .ok
    ) -> Response {
        let session = context.session
        let layout = ConsoleLayout(
            title: title, readOnly: readOnly, signedIn: session != nil, csrf: session?.csrfToken(keys: keys),
            nav: session == nil ? [] : Section.allCases.map { .init(href: $0.href, label: $0.rawValue, current: $0 == section) },
            notice: request.uri.queryParameters.get("notice")?.nonBlank)
        let template = type(of: page).template
        guard let html = library.render(ConsoleFrame(layout: layout, page: page), withTemplate: template.rawValue) else {
            context.logger.error("console template is missing", metadata: ["template": "\(template.rawValue)", "path": "\(request.uri.path)"])
            return Self.html("The console could not draw this page: its template \(template.rawValue) is missing.", status: .internalServerError)
        }
        return Self.html(html, status: status)
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// The "are you sure?" page every action shows first: its form again, with `confirm=yes`.
    func confirmation(
        _ request: Request, _ context: ConsoleRequestContext, section: Section?, action: String, question: String, button: String,
        back: String, fields: [HiddenField] = []
    ) -> Response {
        page(
            ConfirmPage(action: action, question: question, button: button, back: back, fields: fields), title: "Confirm", section: section,
            request: request, context: context)
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
