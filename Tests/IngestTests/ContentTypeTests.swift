// SPDX-License-Identifier: Apache-2.0
@testable import Ingest
import Testing

/// Which `Content-Type` a webhook may carry: JSON only, in any case, with or without parameters.
struct ContentTypeTests {
    @Test(arguments: [
        ("application/json", true), ("Application/JSON", true), ("application/json; charset=utf-8", true),
        (" application/json ", true), ("application/json\t;charset=utf-8", true), ("APPLICATION/JSON;", true),
        ("application/jsonx", false), ("application/jso", false), ("application/json5", false), ("applicationNjson", false),
        ("application\\json", false), ("application/xml", false), ("text/plain", false), ("", false), (";application/json", false),
        ("application json", false), ("application/\u{0}json", false), ("multipart/form-data; boundary=application/json", false),
    ])
    func aContentTypeIsJSONOrNot(contentType: String, isJSON: Bool) {
        #expect(EventReceiver.isJSON(contentType) == isJSON)
    }
}
