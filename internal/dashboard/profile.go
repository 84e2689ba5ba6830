package dashboard

import "net/http"

// routesProfile: password, e-mail, two-factor sign-in, recovery codes and personal access tokens.
func (d *Dashboard) routesProfile(m *http.ServeMux) {}
