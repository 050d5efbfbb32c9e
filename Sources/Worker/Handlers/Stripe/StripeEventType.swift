// SPDX-License-Identifier: Apache-2.0

/// The Stripe event types Sluice acts on, defined once: ``StripeDecider`` switches on them and
/// `docs/getting-started.md` lists them as the types to enable on the Stripe webhook endpoint
/// (a test keeps the two equal). Other types are recorded and completed.
enum StripeEventType: String, CaseIterable, Sendable {
    case paymentIntentSucceeded = "payment_intent.succeeded"
    case paymentIntentProcessing = "payment_intent.processing"
    case paymentIntentPaymentFailed = "payment_intent.payment_failed"
    case paymentIntentCanceled = "payment_intent.canceled"
    case invoicePaymentPaid = "invoice_payment.paid"
    case checkoutSessionCompleted = "checkout.session.completed"
    case checkoutSessionAsyncPaymentSucceeded = "checkout.session.async_payment_succeeded"
    case checkoutSessionAsyncPaymentFailed = "checkout.session.async_payment_failed"
    case checkoutSessionExpired = "checkout.session.expired"
    case customerSubscriptionCreated = "customer.subscription.created"
    case customerSubscriptionUpdated = "customer.subscription.updated"
    case customerSubscriptionDeleted = "customer.subscription.deleted"
    case customerSubscriptionPaused = "customer.subscription.paused"
    case customerSubscriptionResumed = "customer.subscription.resumed"
    case invoicePaid = "invoice.paid"
    case invoicePaymentSucceeded = "invoice.payment_succeeded"
    case chargeRefunded = "charge.refunded"
    case chargeDisputeCreated = "charge.dispute.created"
    /// An inquiry escalated into a chargeback, or a dispute whose funds Stripe took.
    case chargeDisputeFundsWithdrawn = "charge.dispute.funds_withdrawn"
    case chargeDisputeClosed = "charge.dispute.closed"
    case chargeDisputeFundsReinstated = "charge.dispute.funds_reinstated"
    case setupIntentSucceeded = "setup_intent.succeeded"
    case setupIntentSetupFailed = "setup_intent.setup_failed"
    /// A Connect platform's account was disconnected: its links are forgotten.
    case accountApplicationDeauthorized = "account.application.deauthorized"
}
