// SPDX-License-Identifier: Apache-2.0

/// The console's Mustache templates, each registered under its raw value when the renderer is
/// made; a page names its template with ``ConsolePage/template``.
enum ConsoleTemplate: String, CaseIterable, Sendable {
    case layout, login, confirm, message, overview
    case deadLetters = "dead-letters", deadLetter = "dead-letter"
    case customers, customer, rebuild
    case endpoints, endpoint
    case products

    /// The template's text.
    var text: String {
        switch self {
        case .layout: LayoutTemplates.layout
        case .login: LayoutTemplates.login
        case .confirm: LayoutTemplates.confirm
        case .message: LayoutTemplates.message
        case .overview: OverviewTemplate.template
        case .deadLetters: DeadLetterTemplates.list
        case .deadLetter: DeadLetterTemplates.detail
        case .customers: CustomerTemplates.search
        case .customer: CustomerTemplates.customer
        case .rebuild: CustomerTemplates.rebuild
        case .endpoints: EndpointTemplates.list
        case .endpoint: EndpointTemplates.detail
        case .products: ProductTemplates.list
        }
    }
}
