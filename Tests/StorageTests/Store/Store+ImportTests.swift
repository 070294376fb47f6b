import FirebaseTree
import Foundation
import PostgresTestSupport
import Testing
import TreeTestSupport

@testable import Storage

@Suite("Import and export round trips")
struct TreeRoundTripTests {
    @Test func friendlyPixFixtureComesBackByteForByte() throws {
        let fixture = try String(
            contentsOf: fixtureDirectory.appendingPathComponent("friendlypix-console-export.json"),
            encoding: .utf8)
        let store = try makeStore()
        let report = try importJSON(fixture, into: store)
        #expect(report.rejects.isEmpty)
        #expect(try exportJSON(store, options: .init(isPretty: true)) == fixture)
        #expect(try TreeValue.parse(json: exportJSON(store)) == TreeValue.parse(json: fixture))
        // Its flat posts are read as AppCoda feed posts, whatever their fields.
        let feedPosts = try store.connection.query("SELECT count(*) FROM feed_posts").first!.decode(Int.self, at: 0)
        #expect(feedPosts == 266)
    }

    @Test(arguments: 0..<40)
    func randomTreesSurviveImportThenExport(seed: Int) throws {
        var random = RandomTree(seed: seed)
        let tree = random.database()
        let json = random.json(tree)
        let store = try makeStore()
        let report = try importJSON(json, into: store, chunkSize: seed % 3 == 0 ? 7 : .max)
        #expect(report.rejects.isEmpty, "\(report.rejects)")
        let exported = try exportJSON(store)
        if try TreeValue.parse(json: exported) != tree {
            var writer = JSONTextWriter()
            writer.value(tree)
            Issue.record(
                Comment(
                    rawValue: "not the same tree: "
                        + firstDifference(exported, String(decoding: writer.bytes, as: UTF8.self))))
        }
        // The export is canonical: the writer's own rendering of the same tree, and a fixed point.
        var writer = JSONTextWriter()
        writer.value(tree)
        expectSameText(exported, String(decoding: writer.bytes, as: UTF8.self))
        try importJSON(exported, into: store)
        #expect(try exportJSON(store) == exported)
        for options in [
            JSONTextWriter.Options(rendersArrays: false), .init(isPretty: true), .init(keepsPriorities: false),
        ] {
            var expected = JSONTextWriter(options: options)
            expected.value(tree)
            expected.finish()
            expectSameText(try exportJSON(store, options: options), String(decoding: expected.bytes, as: UTF8.self))
        }
    }

    @Test func mergeReplacesTheFilesTopLevelNodesAndKeepsTheOthers() throws {
        let store = try consistentStore()
        let before = try exportJSON(store)
        let file = #"{"users": {"dave": {"username": "dave"}}, "settings": {"theme": "dark"}}"#
        let dryRun = try importJSON(file, into: store, options: ImportOptions(mode: .merge, isDryRun: true))
        #expect(dryRun.rowsReplaced == 3)
        expectSameText(try exportJSON(store), before)

        let report = try importJSON(file, into: store, options: ImportOptions(mode: .merge))
        #expect(report.rowsReplaced == 3 && report.rowsImported == 2)
        var expected = consistentTree.removing("users")
        expected = expected.setting("users", #"{"dave": {"username": "dave"}}"#).setting(
            "settings", #"{"theme": "dark"}"#)
        try expectTree(store, expected)
        // Merging the same again changes nothing more.
        _ = try importJSON(file, into: store, options: ImportOptions(mode: .merge))
        try expectTree(store, expected)
    }

    @Test func importAtAPathReplacesOrUpdatesThatNodeOnly() throws {
        let store = try consistentStore()
        let post =
            #"{"image_url": "u", "image_height": 1, "created_at": 1, "like_count": 0, "poster": {"uid": "bob", "username": "bob"}}"#
        let replace = try importJSON(
            #"{"-Pnew": \#(post)}"#, into: store, options: ImportOptions(at: ["posts", "bob"]))
        #expect(replace.rowsReplaced == 2 && replace.rowsImported == 1)
        var expected = consistentTree.removing("posts/bob").setting("posts/bob/-Pnew", post)
        try expectTree(store, expected)

        let merge = try importJSON(
            #"{"dave": {"username": "dave"}, "alice": null}"#, into: store,
            options: ImportOptions(mode: .merge, at: ["users"]))
        #expect(merge.rowsReplaced == 1 && merge.rowsImported == 1)
        expected = expected.removing("users/alice").setting("users/dave", #"{"username": "dave"}"#)
        try expectTree(store, expected)

        _ = try importJSON(#""dark""#, into: store, options: ImportOptions(at: ["settings", "theme"]))
        _ = try importJSON(#"{"followers": null}"#, into: store, options: ImportOptions(mode: .merge))
        expected = expected.setting("settings/theme", #""dark""#).removing("followers")
        try expectTree(store, expected)

        // Inside a stored record the node is part of the record's row: the record is rewritten with it, as a
        // write there does, and stays one row.
        _ = try importJSON(#""robert""#, into: store, options: ImportOptions(at: ["posts", "bob", "-Pnew", "poster"]))
        expected = expected.setting("posts/bob/-Pnew/poster", #""robert""#)
        try expectTree(store, expected)
        #expect(
            try store.connection.query("SELECT count(*) FROM posts WHERE post_key = '-Pnew'")[0].decode(Int.self, at: 0)
                == 1)
        // A file of nothing there removes that field only, and only with leave.
        #expect {
            try importJSON("null", into: store, options: ImportOptions(at: ["posts", "bob", "-Pnew", "poster"]))
        } throws: {
            ($0 as? StorageError)?.remedy == .allowEmptying
        }
        _ = try importJSON(
            "null", into: store, options: ImportOptions(at: ["posts", "bob", "-Pnew", "poster"], allowsEmptying: true))
        expected = expected.removing("posts/bob/-Pnew/poster")
        try expectTree(store, expected)
    }

    @Test func typedFieldsOfAnotherShapeStayInExtraAndComeBack() throws {
        // Each typed field once of its type and once not: the column takes what fits, `extra` keeps the rest
        // (a member object's other members, a members map's entries that are not `true`), and export gives back
        // the file's tree.
        let json = """
            {"chats":{"u1":{"-Ca":{"members":{"u1":true,"u2":false,"u3":true},"title":7},\
            "-Cb":{"members":{"u1":"x"},"lastMessageSent":"soon",".priority":2}}},\
            "messages":{"-Ca":{"-Ma":{"sender":"u1","timestamp":1.5},"-Mb":{"sender":{"uid":"u1","mood":"ok"}}}},\
            "posts":{"u1":{"-Pa":{"like_count":1.5,"poster":{"uid":"u1","username":3},"image_url":true},\
            "-Pb":{"like_count":-2,"created_at":{"a":1}}}},\
            "users":{"u1":{"username":{"first":"ana"}},"u2":{"username":"bo","bio":"hi"}}}
            """
        let store = try makeStore()
        try importJSON(json, into: store)
        let rows = try store.connection.query(
            """
            SELECT * FROM (
            SELECT 'chats' AS t, members::text, coalesce(title, '-'), extra::text AS x FROM chats
            UNION ALL SELECT 'messages', sender_uid, coalesce(sender_username, '-'), extra::text FROM messages
            UNION ALL SELECT 'posts', coalesce(like_count::text, '-'), coalesce(poster_username, '-'), extra::text
                FROM posts
            UNION ALL SELECT 'users', coalesce(username, '-'), '', extra::text FROM users
            ) rows ORDER BY t, x COLLATE "C"
            """
        ).map { row in try (0..<4).map { try row.decode(String?.self, at: $0) ?? "NULL" }.joined(separator: " | ") }
        #expect(
            rows == [
                #"chats | NULL | - | {"members": {"u1": "x"}, ".priority": 2, "lastMessageSent": "soon"}"#,
                #"chats | {u1,u3} | - | {"title": 7, "members": {"u2": false}}"#,
                #"messages | NULL | - | {"sender": "u1"}"#,
                #"messages | u1 | - | {"sender": {"mood": "ok"}}"#,
                #"posts | -2 | - | {"created_at": {"a": 1}}"#,
                #"posts | - | - | {"poster": {"username": 3}, "image_url": true, "like_count": 1.5}"#,
                #"users | bo |  | {"bio": "hi"}"#,
                #"users | - |  | {"username": {"first": "ana"}}"#,
            ])
        try expectTree(store, try #require(try TreeValue.parse(json: json)))
    }

    @Test func numbersReachTheirColumnsAsTheReaderParsedThem() throws {
        // A typed number goes to the server as the text it was read as: every shape of JSON number must land as
        // the double the reader made of it (zero without its sign, an underflow as zero, the extremes, digits
        // past a double's precision, integers past 2^53), and export must give those doubles back.
        let texts = [
            "1e2", "1E+2", "-1.5e-3", "0.1", "0.1000000000000000055511151231257827021181583404541015625",
            "4.9e-324", "2.2250738585072014e-308", "1.7976931348623157e308", "-1.7976931348623157E308",
            "123456789012345678901234567890", "-0", "0.0", "-0.0e5", "1e-400", "9007199254740993",
            "3.141592653589793238462643383279", "1497918951.91262", "100", "-7", "5e-324",
        ]
        let posts = texts.enumerated().map { #""-P\#($0.offset)":{"created_at":\#($0.element),"image_url":"u"}"# }
        let json = #"{"posts":{"u1":{"# + posts.joined(separator: ",") + "}}}"
        let store = try makeStore()
        let report = try importJSON(json, into: store)
        #expect(report.rejects.isEmpty)
        let stored = try store.connection.query("SELECT post_key, created_at FROM posts").map {
            (try $0.decode(String.self, at: 0), try $0.decode(Double.self, at: 1))
        }
        #expect(stored.count == texts.count)
        for (key, value) in stored {
            let text = texts[Int(key.dropFirst(2))!]
            let parsed = try #require(Array(text.utf8).withUnsafeBufferPointer { JSONReader.parseNumber($0) })
            #expect(value.bitPattern == (parsed == 0 ? 0 : parsed).bitPattern, "\(text) stored as \(value)")
        }
        try expectTree(store, try #require(try TreeValue.parse(json: json)))
    }

    @Test func aRepeatedTypedFieldKeepsItsLastValueBesideTheOthers() throws {
        // The typed strings of a record share one buffer: a field read again replaces its bytes whether it was
        // the last one read or not, and the fields read between keep theirs.
        let json = """
            {"chats":{"u1":{"-Ca":{"title":"a first title, long","memberHash":"h1","title":"second",\
            "lastMessage":"hi","lastMessageSent":1.5,"lastMessageSent":2.25},\
            "-Cb":{"title":"x","title":"yy","title":"zzz","memberHash":"h2"}}}}
            """
        let store = try makeStore()
        try importJSON(json, into: store)
        let rows = try store.connection.query(
            "SELECT chat_key, title, member_hash, last_message, last_message_sent FROM chats ORDER BY chat_key"
        ).map { row in try (0..<5).map { try row.decode(String?.self, at: $0) ?? "NULL" }.joined(separator: " | ") }
        #expect(rows == ["-Ca | second | h1 | hi | 2.25", "-Cb | zzz | h2 | NULL | NULL"])
    }

    @Test func makestagramTreeLandsInTypedColumns() throws {
        let json = """
            {"users": {"u1": {"username": "ana"}, "u2": {"username": "bo", "bio": "hi"}},
             "posts": {"u1": {"-KpostA": {"image_url": "https://i/a.jpg", "image_height": 374.9999999999999,
                                          "created_at": 1497918951.91262, "like_count": 1,
                                          "poster": {"uid": "u1", "username": "ana"}},
                              "-KpostB": {"image_url": "https://i/b.jpg", "image_height": 320, "created_at": 1497918999}}},
             "postLikes": {"-KpostA": {"u2": true}},
             "followers": {"u1": {"u2": true}}, "following": {"u2": {"u1": true}},
             "timeline": {"u2": {"-KpostA": {"poster_uid": "u1"}}},
             "chats": {"u1": {"-Kchat": {"title": "bo", "memberHash": "-4181", "members": {"u2": true, "u1": true},
                                         "lastMessage": "ana: hi", "lastMessageSent": 1497918951.5}}},
             "messages": {"-Kchat": {"-Kmsg": {"content": "hi", "timestamp": 1497918951.5,
                                               "sender": {"uid": "u1", "username": "ana"}}}}}
            """
        let store = try makeStore()
        try importJSON(json, into: store)
        let post = try store.connection.query(
            """
            SELECT image_url, image_height, created_at, like_count, poster_uid, poster_username, extra
            FROM posts WHERE owner_uid = 'u1' AND post_key = '-KpostA'
            """
        ).first!
        #expect(try post.decode(String.self, at: 0) == "https://i/a.jpg")
        #expect(try post.decode(Double.self, at: 1) == 374.9999999999999)
        #expect(try post.decode(Double.self, at: 2) == 1497918951.91262)
        #expect(try post.decode(Int.self, at: 3) == 1)
        #expect(try post.decode(String.self, at: 4) == "u1")
        #expect(try post.decode(String?.self, at: 6) == nil)
        let olderPost = try store.connection.query(
            "SELECT like_count, poster_uid FROM posts WHERE post_key = '-KpostB'"
        ).first!
        #expect(try olderPost.decode(Int?.self, at: 0) == nil)
        let user = try store.connection.query("SELECT username, extra::text FROM users WHERE uid = 'u2'").first!
        #expect(try user.decode(String.self, at: 0) == "bo")
        #expect(try user.decode(String.self, at: 1) == #"{"bio": "hi"}"#)
        let chat = try store.connection.query("SELECT members, member_hash FROM chats").first!
        #expect(try chat.decode([String].self, at: 0) == ["u1", "u2"])
        #expect(try chat.decode(String.self, at: 1) == "-4181")
        for (table, count) in [
            ("post_likes", 1), ("followers", 1), ("following", 1), ("timeline", 1), ("messages", 1),
            ("unmapped_values", 0),
        ] {
            let rows = try store.connection.query("SELECT count(*) FROM \(identifier: table)").first!.decode(
                Int.self, at: 0)
            #expect(rows == count, "\(table)")
        }
        #expect(try TreeValue.parse(json: exportJSON(store)) == TreeValue.parse(json: json))
    }

    @Test func appCodaFeedLandsInTypedColumns() throws {
        let json = """
            {"posts": {"-Kfeed1": {"imageFileURL": "https://i/1.jpg", "user": "Zoë", "votes": 3, "timestamp": 1497918951912},
                       "-Kfeed2": {"imageFileURL": "https://i/2.jpg", "user": "Al", "votes": 0, "timestamp": 1497918952000}}}
            """
        let store = try makeStore()
        try importJSON(json, into: store)
        let rows = try store.connection.query(
            "SELECT post_id, user_name, votes, timestamp_ms FROM feed_posts ORDER BY timestamp_ms DESC")
        #expect(rows.count == 2)
        #expect(try rows[0].decode(String.self, at: 0) == "-Kfeed2")
        #expect(try rows[1].decode(String.self, at: 1) == "Zoë")
        #expect(try rows[1].decode(Int.self, at: 2) == 3)
        #expect(try rows[1].decode(Double.self, at: 3) == 1497918951912)
        #expect(
            try exportJSON(store)
                == #"{"posts":{"-Kfeed1":{"imageFileURL":"https://i/1.jpg","timestamp":1497918951912,"user":"Zoë","votes":3},"-Kfeed2":{"imageFileURL":"https://i/2.jpg","timestamp":1497918952000,"user":"Al","votes":0}}}"#
        )
    }

    @Test func firebaseSemantics() throws {
        let store = try makeStore()
        try importJSON(
            #"{"a": [1, null, 3], "b": null, "c": {}, "d": {"e": null, "f": []}, "g": {".priority": 1},"#
                + #" "h": {".value": "v", ".priority": "p"}, "i": {".priority": 2.5, "x": -0.0}, "j": "\uFEFF"}"#,
            into: store)
        #expect(
            try exportJSON(store)
                == #"{"a":[1,null,3],"h":{".value":"v",".priority":"p"},"i":{".priority":2.5,"x":0},"j":"\#u{FEFF}"}"#)
        #expect(
            try exportJSON(store, options: .init(rendersArrays: false, keepsPriorities: false))
                == #"{"a":{"0":1,"2":3},"h":"v","i":{"x":0},"j":"\#u{FEFF}"}"#)
    }

    @Test func integerKeysExportInRTDBOrder() throws {
        let store = try makeStore()
        try importJSON(
            #"{"users": {"10": {"username": "ten"}, "9": {"username": "nine"}, "a": {"username": "a"},"#
                + #" "-1": {"username": "minus"}}, "x": {"\#u{E000}": 1, "😀": 2, "z": 3}}"#, into: store)
        #expect(
            try exportJSON(store)
                == #"{"users":{"-1":{"username":"minus"},"9":{"username":"nine"},"10":{"username":"ten"},"a":{"username":"a"}},"x":{"z":3,"😀":2,"\#u{E000}":1}}"#
        )
    }

    @Test func typedRecordsKeepRTDBOrderArraysAndPriorities() throws {
        // Integer uids make /users an array, chat members sort as RTDB keys, and records with a priority or an
        // unknown field, or with unmapped values inside, take the general way: each must give the canonical text.
        let json = #"""
            {"users": {"0": {"username": "zero"}, "1": {"username": "one"}, "3": {"username": "three", ".priority": 2}},
             "chats": {"10": {"-C1": {"title": "t", "memberHash": "1", "members": {"9": true, "10": true, "b": true, "a": true},
                                      "lastMessage": "a: b", "lastMessageSent": 1500000000.5}},
                       "9": {"-C1": {"title": "t", "members": {"10": true, "9": true}, "extra": [1, 2]},
                             "-C2": {"members": {"9": true}}}},
             "timeline": {"u": {"-P1": {"poster_uid": "v"}, "-P2": {"poster_uid": "v", "seen": {"at": 5}}, "-P3": 7}},
             "following": {"u": {"0": true, "1": true}, "v": {"w": "yes"}}}
            """#
        let store = try makeStore()
        #expect(try importJSON(json, into: store).rejects.isEmpty)
        let tree = try #require(try TreeValue.parse(json: json))
        for options in [
            JSONTextWriter.Options(), .init(rendersArrays: false), .init(isPretty: true), .init(keepsPriorities: false),
        ] {
            var expected = JSONTextWriter(options: options)
            expected.value(tree)
            expected.finish()
            expectSameText(try exportJSON(store, options: options), String(decoding: expected.bytes, as: UTF8.self))
        }
    }

    @Test func emptyStoreExportsNull() throws {
        let store = try makeStore()
        #expect(try exportJSON(store) == "null")
        try importJSON("null", into: store)
        #expect(try exportJSON(store) == "null")
    }
}

@Suite("Import failures and rejects")
struct TreeImportFailureTests {
    private static let before = #"{"users": {"u1": {"username": "kept"}}, "other": [1, 2]}"#

    /// Runs a failing import on a store holding `before`, and checks the store did not change.
    private func expectFailureLeavesStoreUnchanged(_ input: [UInt8], _ check: (StorageError) -> Void) throws {
        let store = try makeStore()
        try importJSON(Self.before, into: store)
        let exportBefore = try exportJSON(store)
        do {
            _ = try store.importTree(from: MemorySource(input, chunkSize: 4096))
            Issue.record("the import should have failed")
        } catch let error as StorageError {
            check(error)
        }
        #expect(try exportJSON(store) == exportBefore)
    }

    @Test func malformedByteAtNinetyPercent() throws {
        var bytes = Array(#"{"users": {"#.utf8)
        for index in 0..<2000 { bytes += Array(#""u\#(index)": {"username": "n\#(index)"},"#.utf8) }
        let cut = bytes.count * 9 / 10
        bytes[cut] = 0xFF
        try expectFailureLeavesStoreUnchanged(bytes) { error in
            #expect(error.kind == .malformedInput)
            #expect(error.inputPosition?.offset == cut)
            #expect(error.description.contains("/users/"))
            #expect(error.description.contains("rolled back"))
        }
    }

    /// With --at the file is read inside a wrapper (`{"posts":` … `}`); errors still name the file's own bytes.
    @Test func errorPositionsUnderAtAreTheFilesOwn() throws {
        let text = "{\"u1\": {\"-P1\": {\"image_url\": \"a\"},\n  \"-P2\": {\"image_url\": tru}}}"
        for (at, path) in [([String](), "/u1/-P2/image_url"), (["posts"], "/posts/u1/-P2/image_url")] {
            var failure: StorageError?
            do {
                _ = try ImportMapping.validate(MemorySource(text), options: ImportOptions(at: at))
            } catch let error as StorageError {
                failure = error
            }
            #expect(failure?.inputPosition?.offset == 58, "\(at)")
            #expect(failure?.inputPosition?.line == 2, "\(at)")
            #expect(failure?.inputPosition?.column == 24, "\(at)")
            #expect(failure?.description.contains("reading \(path)") == true, "\(String(describing: failure))")
        }
    }

    @Test func truncatedEmptyAndDeeplyNestedFiles() throws {
        try expectFailureLeavesStoreUnchanged(Array(#"{"users": {"u1": {"username": "x""#.utf8)) { error in
            #expect(error.message.contains("truncated"))
        }
        try expectFailureLeavesStoreUnchanged([]) { error in
            #expect(error.message.contains("empty"))
        }
        let deep =
            Array(String(repeating: #"{"a":"#, count: 100_000).utf8) + Array("1".utf8)
            + Array(String(repeating: "}", count: 100_000).utf8)
        try expectFailureLeavesStoreUnchanged(deep) { error in
            #expect(error.message.contains("deeper than Firebase's 32 levels"))
        }
    }

    @Test func oversizedStringAndNULAreRejects() throws {
        let big =
            Array(#"{"users": {"u1": {"username": ""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: 20 << 20)
            + Array(#""}}}"#.utf8)
        try expectFailureLeavesStoreUnchanged(big) { error in
            #expect(error.message.contains("rejected /users/u1/username"))
            #expect(error.message.contains("10 MB"))
        }
        try expectFailureLeavesStoreUnchanged(Array(#"{"a": "x\u0000y"}"#.utf8)) { error in
            #expect(error.message.contains("NUL"))
        }
        try expectFailureLeavesStoreUnchanged(Array(#"{"a": {"b.c": 1}}"#.utf8)) { error in
            #expect(error.message.contains("rejected /a/b.c"))
        }
    }

    @Test func maxRejectsLetsValuesThroughAndListsThem() throws {
        let store = try makeStore()
        var seen: [ImportReject] = []
        let json = #"{"a": {"ok": 1, "b$d": 2, "long": "\#(String(repeating: "y", count: 10))"}, "c": {"x": "\u0000"}}"#
        let report = try store.importTree(
            from: MemorySource(json), options: ImportOptions(maximumRejects: 5),
            observer: ImportObserver(onReject: { seen.append($0) }))
        #expect(report.rejects.map(\.path) == ["/a/b$d", "/c/x"])
        #expect(report.rejects[0].value == "2")
        #expect(seen == report.rejects)
        #expect(try exportJSON(store) == #"{"a":{"long":"yyyyyyyyyy","ok":1}}"#)
    }

    @Test func duplicateKeysLastOneWins() throws {
        let store = try makeStore()
        let json = """
            {"users": {"u1": {"username": "first", "username": "second"}, "u2": {"username": "x"},
                       "u1": {"username": "third"}},
             "posts": {"u1": {"-Ka": {"image_url": "a"}}, "u1": {"-Kb": {"image_url": "b"}}},
             "misc": {"k": {"deep": 1}, "k": {"other": 2}},
             "misc": {"final": true}}
            """
        let report = try importJSON(json, into: store)
        #expect(report.warningCount == 5)
        #expect(
            try exportJSON(store)
                == #"{"misc":{"final":true},"posts":{"u1":{"-Kb":{"image_url":"b"}}},"users":{"u1":{"username":"third"},"u2":{"username":"x"}}}"#
        )
        let users = report.lines.first { $0.table == "users" }!
        #expect(users.rowsRead == 3)
        #expect(users.rowsImported == 2)
    }

    @Test func aRepeatedKeyAfterANullKeepsTheSiblingBeforeIt() throws {
        // A repeat of the child read just before drops that child's rows unsent; a null (never read as a child)
        // between a sibling and a repeated key must not make the sibling look like the repeated one, at any depth.
        let store = try makeStore()
        let json = """
            {"users": {"u1": {"username": "a"}, "u2": null, "u2": {"username": "b"},
                       "u33": null, "u33": {"username": "e"},
                       "u": {"username": "c"}, "uu": null, "u": {"username": "d"}},
             "posts": {"o1": {"p1": {"image_url": "x"}, "p2": null, "p2": {"image_url": "y"}}},
             "followers": {"a": {"b": true, "c": null, "c": true, "c": true}}}
            """
        try importJSON(json, into: store)
        let expected =
            #"{"followers":{"a":{"b":true,"c":true}},"posts":{"o1":{"p1":{"image_url":"x"},"p2":{"image_url":"y"}}},"#
            + #""users":{"u":{"username":"d"},"u1":{"username":"a"},"u2":{"username":"b"},"u33":{"username":"e"}}}"#
        #expect(try exportJSON(store) == expected)
    }

    @Test func dryRunRollsBack() throws {
        let store = try makeStore()
        try importJSON(#"{"a": 1}"#, into: store)
        let report = try importJSON(#"{"b": 2}"#, into: store, options: ImportOptions(isDryRun: true))
        #expect(report.isDryRun)
        #expect(report.rowsImported == 1)
        #expect(try exportJSON(store) == #"{"a":1}"#)
    }

    @Test func byteOrderMarkIsSkipped() throws {
        let store = try makeStore()
        _ = try store.importTree(from: MemorySource([0xEF, 0xBB, 0xBF] + Array(#"{"a": 1}"#.utf8)))
        #expect(try exportJSON(store) == #"{"a":1}"#)
    }
}
