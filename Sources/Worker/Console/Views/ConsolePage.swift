// SPDX-License-Identifier: Apache-2.0
import Mustache

/// What one console page shows: a `Sendable` value whose stored properties are the names its
/// template uses. A section (`{{#name}}…{{/name}}`) opens for `true`, a non-empty array or a
/// non-`nil` value — and for any `String`, empty too — so text that may be blank is `String?`,
/// made with ``Swift/String/nonBlank``.
protocol ConsolePage: Sendable {
    /// The template that draws this page inside the layout.
    static var template: ConsoleTemplate { get }
}

/// What the layout around every page needs.
struct ConsoleLayout: Sendable {
    struct NavigationLink: Sendable {
        var href: String
        var label: String
        var current: Bool
    }

    var title: String
    var readOnly: Bool
    var signedIn: Bool
    /// The session's CSRF token, for every form on the page.
    var csrf: String?
    var nav: [NavigationLink]
    /// The outcome of the last action, from the query string of the redirect after it.
    var notice: String?
}

/// The object a page is rendered from: the layout's names first, then the page's.
struct ConsoleFrame: MustacheParent {
    let layout: ConsoleLayout
    let page: any ConsolePage

    func child(named name: String) -> Any? {
        Self.field(name, of: layout) ?? Self.field(name, of: page)
    }

    /// The stored property `name` of `subject`; an optional's value, `nil` for none.
    static func field(_ name: String, of subject: Any) -> Any? {
        guard let value = Mirror(reflecting: subject).children.first(where: { $0.label == name })?.value else { return nil }
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first?.value
    }
}

extension String {
    /// `nil` for the empty string: blank text opens no section.
    var nonBlank: String? { isEmpty ? nil : self }
}

/// A hidden form field: an action's confirmation and the dead-letter filters post them again.
struct HiddenField: Sendable {
    var name: String
    var value: String
}

/// `/login`.
struct LoginPage: ConsolePage {
    static let template = ConsoleTemplate.login
    var error: String?
}

/// The "are you sure?" page every action shows first: its form again, with `confirm=yes`.
struct ConfirmPage: ConsolePage {
    static let template = ConsoleTemplate.confirm
    var action: String
    var question: String
    var button: String
    var back: String
    var fields: [HiddenField]
}

/// A result to read once: a new endpoint secret, a refusal, the database out of reach.
struct MessagePage: ConsolePage {
    static let template = ConsoleTemplate.message
    var lines: [String]
    var secret: String?
    var back: String
}
