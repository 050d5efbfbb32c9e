-- Every amount in ISO 4217 minor units (issue 36). App Store amounts first. Until now Apple's `price` (milliunits of
-- the currency) was divided by 10 whatever the currency, which is right for two-digit currencies
-- only: ¥480 (480000 milliunits) was stored as 48000 beside Stripe's 480. This rescales the App
-- Store rows already stored to the currency's minor unit, as the worker now stores them
-- (CurrencyMinorUnits.swift; CurrencyMinorUnitsTests ties these lists to its table). Amounts of a
-- three- or four-digit currency lost their last digit to the old division; they are scaled back
-- up, as close as the stored value allows. Runs once, as every migration.
UPDATE transactions SET amount = CASE
        WHEN upper(currency) IN ('BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF', 'UGX', 'UYI', 'VND', 'VUV', 'XAF', 'XOF', 'XPF')
            THEN round(amount / 100.0)::bigint
        WHEN upper(currency) IN ('BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND') THEN amount * 10
        WHEN upper(currency) IN ('CLF', 'UYW') THEN amount * 100
    END
WHERE source = 'store_kit' AND amount IS NOT NULL
    AND upper(currency) IN ('BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF', 'UGX', 'UYI', 'VND', 'VUV', 'XAF', 'XOF', 'XPF',
                     'BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND', 'CLF', 'UYW');

-- Stripe's amounts were kept as Stripe gives them, which is ISO 4217's minor unit for all but two
-- currencies: ISK is two-decimal in Stripe's API (ISO: none) and MGA zero-decimal there (ISO: two)
-- (StripeAmounts.swift; the same test ties these to its table).
UPDATE transactions SET amount = round(amount / 100.0)::bigint, amount_refunded = round(amount_refunded / 100.0)::bigint
WHERE source = 'web_checkout' AND upper(currency) = 'ISK';
UPDATE transactions SET amount = amount * 100, amount_refunded = amount_refunded * 100
WHERE source = 'web_checkout' AND upper(currency) = 'MGA';
