package client

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/keyward/keyward/wire"
)

// Texts returns the app's remote texts with licenseKey's overrides on top
// ("" for the defaults).
func (c *Client) Texts(ctx context.Context, licenseKey string) (map[string]string, error) {
	h := http.Header{}
	if k := strings.TrimSpace(licenseKey); k != "" {
		h.Set("Authorization", "Bearer "+k)
	}
	var r wire.TextsReply
	if _, err := c.do(ctx, call{method: "GET", path: "/api/app/text.php", kind: envelopeCall, header: h}, &r); err != nil {
		return nil, err
	}
	if r.Texts == nil {
		r.Texts = map[string]string{}
	}
	return r.Texts, nil
}

// Text returns one remote text; ok is false when it is not set.
func (c *Client) Text(ctx context.Context, licenseKey, name string) (text string, ok bool, err error) {
	h := http.Header{}
	if k := strings.TrimSpace(licenseKey); k != "" {
		h.Set("Authorization", "Bearer "+k)
	}
	var r wire.TextReply
	if _, err := c.do(ctx, call{method: "GET", path: "/api/app/text.php", query: url.Values{"name": {name}},
		kind: envelopeCall, header: h}, &r); err != nil {
		return "", false, err
	}
	if r.Text == nil {
		return "", false, nil
	}
	return *r.Text, true, nil
}

// Slide is an announcement slide.
type Slide = wire.Slide

// Slides returns the active announcement slides in display order.
func (c *Client) Slides(ctx context.Context) ([]Slide, error) {
	var r wire.SlidesReply
	if _, err := c.do(ctx, call{method: "POST", path: "/api/app/slides.php", kind: envelopeCall,
		body: wire.SlidesRequest{Action: "get_slides"}}, &r); err != nil {
		return nil, err
	}
	return r.Slides, nil
}

// SocialLink is a link of the app's info; its ID is the link_id of SocialClick.
type SocialLink = wire.SocialLink

// AppInfo is the answer of Info.
type AppInfo struct {
	Name            string            `json:"name"`
	Version         string            `json:"version"`
	DownloadURL     string            `json:"download_url"`
	LoginMessage    string            `json:"login_message"`
	Message         string            `json:"message"`
	MaintenanceMode bool              `json:"maintenance_mode"`
	MaintenanceMsg  string            `json:"maintenance_msg"`
	Branding        map[string]string `json:"branding"`
	SocialLinks     []SocialLink      `json:"-"`
}

// Info returns the app's public information and social links.
func (c *Client) Info(ctx context.Context) (*AppInfo, error) {
	var r wire.InfoReply
	if _, err := c.do(ctx, call{method: "GET", path: "/api/app/info.php", kind: envelopeCall}, &r); err != nil {
		return nil, err
	}
	a, b := r.App, r.App.Branding
	return &AppInfo{Name: a.Name, Version: a.Version, DownloadURL: a.DownloadURL, LoginMessage: a.LoginMessage,
		Message: a.Message, MaintenanceMode: a.MaintenanceMode, MaintenanceMsg: a.MaintenanceMsg,
		Branding: map[string]string{"logo_url": b.LogoURL, "primary_color": b.PrimaryColor, "accent_color": b.AccentColor,
			"website_url": b.WebsiteURL, "support_email": b.SupportEmail},
		SocialLinks: r.SocialLinks}, nil
}

// SocialClick counts a click on the social link linkID.
func (c *Client) SocialClick(ctx context.Context, linkID int64) error {
	_, err := c.do(ctx, call{method: "POST", path: "/api/app/social-click.php", kind: envelopeCall,
		body: wire.SocialClickRequest{LinkID: linkID}}, nil)
	return err
}
