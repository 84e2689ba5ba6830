//go:build !race

package loadtest_test

// raceDetector reports whether the tests run under the race detector, whose
// instrumentation allocates and so changes allocation counts.
const raceDetector = false
