package cli

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeBuild is the README's build step the docs point at.
const (
	readmeBuild  = "go build -o keyward ./cmd/keyward"
	readmeAnchor = "README.md#the-keyward-binary"
)

// commandNames are keyward's subcommands, from the parser.
func commandNames(t *testing.T) []string {
	var c cli
	p, err := newParser(&c, io.Discard, io.Discard, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range p.Model.Children {
		names = append(names, n.Name)
	}
	return names
}

// firstUse is the offset of the first `keyward <subcommand>` in doc (in
// backticks or starting a line of a code block), or -1.
func firstUse(t *testing.T, doc string) int {
	re := regexp.MustCompile("(?m)(?:`|^)keyward (?:--config \\S+ )?(?:" + strings.Join(commandNames(t), "|") + ")\\b")
	if loc := re.FindStringIndex(doc); loc != nil {
		return loc[0]
	}
	return -1
}

// The README keeps its first two commands (run, test), then builds the
// keyward binary before any `keyward …` command; every document in docs/
// that uses one points at that step before its first use; and the step
// works: the binary it builds runs.
func TestReadmeBuildsTheBinary(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(readme, -1)
	if len(blocks) < 3 || blocks[0][1] != "go run ./cmd/keyward serve\n" || blocks[1][1] != "scripts/test\n" {
		t.Fatalf("the README's first two commands changed: %q", blocks)
	}
	build := strings.Index(readme, "```sh\n"+readmeBuild)
	if build < 0 || !strings.Contains(readme, "## The `keyward` binary") || !strings.Contains(readme, "go install ./cmd/keyward") {
		t.Fatalf("the README has no section \"The `keyward` binary\" with %q and go install", readmeBuild)
	}
	if use := firstUse(t, readme); use < 0 || use < build {
		t.Errorf("the README uses `keyward …` (at byte %d) before it builds the binary (at byte %d)", use, build)
	}

	docs, _ := filepath.Glob("../../docs/*.md")
	using := 0
	for _, f := range docs {
		if filepath.Base(f) == "ARCHITECTURE.md" { // a package map, not instructions
			continue
		}
		b, _ := os.ReadFile(f)
		doc := string(b)
		use := firstUse(t, doc)
		if use < 0 {
			continue
		}
		using++
		if at := strings.Index(doc, "(../"+readmeAnchor+")"); at < 0 || at > use {
			t.Errorf("%s uses `keyward …` without first pointing at the README's build step (../%s)", f, readmeAnchor)
		}
	}
	if using < 5 {
		t.Errorf("only %d documents use `keyward …` commands; the check finds none of them?", using)
	}

	// The step itself: build as written and run the binary.
	bin := filepath.Join(t.TempDir(), "keyward")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/keyward")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", readmeBuild, err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "keyward ") {
		t.Fatalf("keyward version: %v, %q", err, out)
	}
}
