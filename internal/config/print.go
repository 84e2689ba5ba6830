package config

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"time"
)

// Setting is one effective setting: its flag, environment variable and
// value, with secrets masked.
type Setting struct {
	Flag  string
	Env   string
	Value string
}

// Masked stands for a secret that is set.
const Masked = "********"

// secretFlags are the settings whose values are never shown.
var secretFlags = map[string]bool{"admin-password": true, "s3-secret-key": true}

// Settings lists every setting of c in declaration order, secrets masked:
// passwords and keys entirely (when set), the password inside
// --database-url.
func (c *Config) Settings() []Setting {
	var out []Setting
	collect(reflect.ValueOf(c).Elem(), &out)
	return out
}

func collect(v reflect.Value, out *[]Setting) {
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			collect(fv, out)
			continue
		}
		name := f.Tag.Get("name")
		if name == "" || !f.IsExported() {
			continue
		}
		val := fmt.Sprint(fv.Interface())
		if d, ok := fv.Interface().(time.Duration); ok {
			val = d.String()
		}
		switch {
		case val == "":
		case secretFlags[name]:
			val = Masked
		case name == "database-url":
			val = maskURL(val)
		}
		*out = append(*out, Setting{Flag: "--" + name, Env: f.Tag.Get("env"), Value: val})
	}
}

// maskURL hides the password of a database URL (all of it when it does not
// parse).
func maskURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return Masked
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
		return strings.Replace(u.String(), ":xxxxx@", ":"+Masked+"@", 1)
	}
	if q := u.Query(); q.Get("password") != "" {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
		return strings.Replace(u.String(), "password=xxxxx", "password="+Masked, 1)
	}
	return s
}
