package dashboard

import "net/http"

// routesWebhooks: destinations, filters, secret rotation, tests, the delivery log and redelivery.
func (d *Dashboard) routesWebhooks(m *http.ServeMux) {}
