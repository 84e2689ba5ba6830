package dashboard

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/keyward/keyward/wire"
)

// Form reading shared by the pages. A value the dashboard cannot even turn
// into the API's type is refused here with badInput, shown like an API
// refusal; everything else is the API's to judge.

// badInput is a refusal of a form value, worded for the owner.
func badInput(msg string) error {
	return &APIError{Status: http.StatusBadRequest, Code: wire.CodeMissingFields, Message: msg}
}

// formStr is a form field with surrounding space removed.
func formStr(c *Ctx, name string) string { return strings.TrimSpace(c.R.PostFormValue(name)) }

// formBool reads a checkbox (or a yes/true/1 field).
func formBool(c *Ctx, name string) bool {
	v := c.R.PostFormValue(name)
	return v == "on" || v == "true" || v == "yes" || v == "1"
}

// formInt reads an optional whole number: ok is false when the field is empty.
func formInt(c *Ctx, name, label string) (n int64, ok bool, err error) {
	v := formStr(c, name)
	if v == "" {
		return 0, false, nil
	}
	n, err = strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false, badInput(label + ": enter a whole number.")
	}
	return n, true, nil
}

// formIntOr reads a whole number, def when the field is empty.
func formIntOr(c *Ctx, name, label string, def int) (int, error) {
	n, ok, err := formInt(c, name, label)
	if err != nil || !ok {
		return def, err
	}
	return int(n), nil
}
