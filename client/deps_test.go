package client

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The SDK shares keyward's envelope and signing code instead of copying it,
// and still depends on nothing outside the standard library: the non-test
// files of client, internal/envelope and internal/signing import only the
// standard library, those two packages and the public wire package.
func TestDependsOnStandardLibraryOnly(t *testing.T) {
	shared := map[string]bool{
		"github.com/keyward/keyward/internal/envelope": true,
		"github.com/keyward/keyward/internal/signing":  true,
		"github.com/keyward/keyward/wire":              true,
	}
	for _, dir := range []string{".", "../internal/envelope", "../internal/signing", "../wire"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range ast.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				first, _, _ := strings.Cut(p, "/")
				if !shared[p] && strings.Contains(first, ".") {
					t.Errorf("%s imports %s: the SDK must stay standard-library only", f, p)
				}
			}
		}
	}
}
