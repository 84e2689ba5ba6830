package dashboard

import "net/http"

// routesContent: texts, slides, app info and branding, social links, the changelog, pricing, orders and subscriptions.
func (d *Dashboard) routesContent(m *http.ServeMux) {}
