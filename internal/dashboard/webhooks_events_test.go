package dashboard

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The event checkboxes of the webhook forms are the events docs/webhooks.md
// documents ("Events and their data"), no more and no fewer, so a new event
// documented there cannot be missing from the form.
func TestWebhookEventsMatchTheDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/webhooks.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## Events and their `data`")
	if !ok {
		t.Fatal("docs/webhooks.md has no section \"Events and their `data`\"")
	}
	var documented []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range regexp.MustCompile("`([a-z_.]+)`").FindAllStringSubmatch(first, -1) {
			documented = append(documented, m[1])
		}
	}
	if len(documented) < 20 {
		t.Fatalf("read only %d events from docs/webhooks.md: %v", len(documented), documented)
	}
	slices.Sort(documented)
	offered := slices.Sorted(slices.Values(webhookEvents))
	if !slices.Equal(documented, offered) {
		t.Errorf("the webhook forms offer %v,\nthe docs document %v", offered, documented)
	}
}
