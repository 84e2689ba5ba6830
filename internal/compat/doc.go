// Package compat holds keyward's client-compatibility suite: black-box tests
// over real HTTP that replay, byte for byte, what each published generation of
// PWF Auth client puts on the wire — pwfauth-python 1.0/1.1, NuGet PWFAuth
// 1.0–1.3, the C++ sample 1.0/1.1, the hand-written VB.NET/C# examples, the
// generated PWFKeys SDKs (python and C#) and third-party browser
// integrations — and decode the replies the way those clients do.
//
// The contract is ../shared/spec/sdk-compat.md. Each test is named after the
// item of its §7 checklist ("What a compatible server must accept and send")
// that it proves: TestCompat01_PathsUnderAnyBase … TestCompat19_DuplicatePosts.
// Item 20 (reply signing) is covered with the signing feature itself.
//
// The client side (envelope sealing and opening, each generation's JSON
// serialisation and headers) is written in the tests on purpose and does not
// use internal/envelope: it is the clients' code being replayed. Servers are
// started with internal/kwtest on every configured engine (SQLite, and
// PostgreSQL when KEYWARD_TEST_DATABASE_URL is set), with an injected clock.
package compat
