package licensefile

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// docVerifier returns the code block of docs/offline.md marked
// <!-- verifier:lang -->.
func docVerifier(t *testing.T, doc, lang string) string {
	t.Helper()
	marker := "<!-- verifier:" + lang + " -->\n```" + lang + "\n"
	_, rest, ok := strings.Cut(doc, marker)
	if !ok {
		t.Fatalf("docs/offline.md has no %q block", marker)
	}
	code, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatalf("unterminated %s block", lang)
	}
	return code + "\n"
}

// verifierCases writes the vector and its variants into dir and returns
// the argument lists with the outcome each must have.
type verifierCase struct {
	name  string
	args  []string // file, hwid, time
	valid bool
	why   string // in the output when invalid
}

func verifierInputs(t *testing.T, dir string) (pub string, cases []verifierCase) {
	t.Helper()
	vector, err := os.ReadFile(filepath.Join("testdata", "vector.lic"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pubPEM, err := os.ReadFile(filepath.Join("testdata", "vector.pub.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pub = write("vector.pub.pem", pubPEM)
	genuine := write("vector.lic", vector)
	crlf := write("crlf.lic", bytes.ReplaceAll(vector, []byte("\n"), []byte("\r\n")))
	// "seats":5 → "seats":9 in the payload; the signature kept.
	tampered := bytes.Replace(vector, []byte("c2VhdHMiOjV9"), []byte("c2VhdHMiOjl9"), 1)
	if bytes.Equal(tampered, vector) {
		t.Fatal("tampering changed nothing")
	}
	tamp := write("tampered.lic", tampered)
	// The same claims signed by another key.
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	c := vectorClaims()
	c.Kid = KidOf(other.Public().(ed25519.PublicKey))
	otherText, err := Sign(c, other)
	if err != nil {
		t.Fatal(err)
	}
	byOther := write("other.lic", []byte(otherText))
	const in, at = "2026-11-30T00:00:00Z", "2026-12-04T10:00:00Z"
	return pub, []verifierCase{
		{"genuine", []string{genuine, "HWID-0001", in}, true, ""},
		{"genuine, CRLF", []string{crlf, "HWID-0001", in}, true, ""},
		{"tampered", []string{tamp, "HWID-0001", in}, false, "bad signature"},
		{"another device", []string{genuine, "HWID-0002", in}, false, "wrong device"},
		{"at valid_until", []string{genuine, "HWID-0001", at}, false, "expired"},
		{"another key", []string{byOther, "HWID-0001", in}, false, "unknown key"},
	}
}

func runVerifierCases(t *testing.T, cmd func(args ...string) *exec.Cmd, pub string, cases []verifierCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := cmd(append([]string{pub}, tc.args...)...).CombinedOutput()
			got := strings.TrimSpace(string(out))
			if tc.valid && (err != nil || got != "valid") {
				t.Fatalf("want valid, got %v: %s", err, got)
			}
			if !tc.valid {
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(got, tc.why) {
					t.Fatalf("want exit 1 and %q, got %v: %s", tc.why, err, got)
				}
			}
		})
	}
}

// TestDocsVector: the test vector printed in docs/offline.md is the
// committed one.
func TestDocsVector(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "offline.md"))
	if err != nil {
		t.Fatal(err)
	}
	vector, _ := os.ReadFile(filepath.Join("testdata", "vector.lic"))
	pub, _ := os.ReadFile(filepath.Join("testdata", "vector.pub.pem"))
	if !bytes.Contains(doc, []byte("```\n"+string(vector)+"```\n")) || !bytes.Contains(doc, []byte("```\n"+string(pub)+"```\n")) {
		t.Fatal("docs/offline.md does not show testdata/vector.lic and vector.pub.pem exactly")
	}
}

// TestDocsGoVerifier: the Go verifier of docs/offline.md, built as its
// own module with the standard library only, accepts the vector and
// refuses a tampered copy, another device, a later time and another key.
func TestDocsGoVerifier(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "offline.md"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module verifier\n\ngo 1.22\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(docVerifier(t, string(doc), "go")), 0o600)
	bin := filepath.Join(dir, "verify")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOPROXY=off", "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of the documented verifier: %v\n%s", err, out)
	}
	pub, cases := verifierInputs(t, t.TempDir())
	runVerifierCases(t, func(args ...string) *exec.Cmd { return exec.Command(bin, args...) }, pub, cases)
}

// TestDocsPythonVerifier: the Python verifier of docs/offline.md does the
// same. It needs python3 with the cryptography package (Python has no
// Ed25519 of its own); without them the test says so and skips.
func TestDocsPythonVerifier(t *testing.T) {
	if err := exec.Command("python3", "-c", "import cryptography").Run(); err != nil {
		t.Skipf("python3 with the cryptography package is not available: %v", err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "offline.md"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "verify.py")
	os.WriteFile(script, []byte(docVerifier(t, string(doc), "python")), 0o600)
	pub, cases := verifierInputs(t, dir)
	runVerifierCases(t, func(args ...string) *exec.Cmd { return exec.Command("python3", append([]string{script}, args...)...) }, pub, cases)
}
