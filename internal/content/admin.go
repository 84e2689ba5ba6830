package content

import (
	"context"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
)

// Owner edits. Each create, update or delete writes its audit entry in the
// same transaction; updates apply a change function to the stored record
// (an error from it aborts the edit), so a partial edit never loses a
// concurrent one.

// CreateSlide validates and stores a new slide.
func (s *Service) CreateSlide(ctx context.Context, actor audit.Actor, sl *Slide) error {
	if err := CheckSlide(sl); err != nil {
		return err
	}
	now := s.clock()
	sl.CreatedAt, sl.UpdatedAt = now, now
	return s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.InsertSlide(ctx, sl); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "slide.create", sl.AppID, sl.Title, map[string]any{"id": sl.ID}))
	})
}

// UpdateSlide applies change to a stored slide and validates the result.
func (s *Service) UpdateSlide(ctx context.Context, actor audit.Actor, appID string, id int64, change func(*Slide) error) (*Slide, error) {
	now := s.clock()
	var out *Slide
	err := s.store.InTx(ctx, func(tx Tx) error {
		sl, err := tx.SlideForUpdate(ctx, appID, id)
		if err != nil {
			return apperr.NotFoundAs(err, "Slide")
		}
		if err := change(sl); err != nil {
			return err
		}
		sl.ID, sl.AppID, sl.UpdatedAt = id, appID, now
		if err := CheckSlide(sl); err != nil {
			return err
		}
		if err := tx.UpdateSlide(ctx, sl); err != nil {
			return err
		}
		out = sl
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "slide.update", appID, sl.Title, map[string]any{"id": id}))
	})
	return out, err
}

// DeleteSlide removes a slide.
func (s *Service) DeleteSlide(ctx context.Context, actor audit.Actor, appID string, id int64) error {
	now := s.clock()
	return s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.DeleteSlide(ctx, appID, id); err != nil {
			return apperr.NotFoundAs(err, "Slide")
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "slide.delete", appID, "", map[string]any{"id": id}))
	})
}

// CreateLink validates and stores a new social link.
func (s *Service) CreateLink(ctx context.Context, actor audit.Actor, l *Link) error {
	if err := CheckLink(l); err != nil {
		return err
	}
	now := s.clock()
	l.CreatedAt, l.UpdatedAt, l.Clicks = now, now, 0
	return s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.InsertLink(ctx, l); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "social_link.create", l.AppID, l.Platform, map[string]any{"id": l.ID, "url": l.URL}))
	})
}

// UpdateLink applies change to a stored link; its click count is kept.
func (s *Service) UpdateLink(ctx context.Context, actor audit.Actor, appID string, id int64, change func(*Link) error) (*Link, error) {
	now := s.clock()
	var out *Link
	err := s.store.InTx(ctx, func(tx Tx) error {
		l, err := tx.LinkForUpdate(ctx, appID, id)
		if err != nil {
			return apperr.NotFoundAs(err, "Link")
		}
		clicks := l.Clicks
		if err := change(l); err != nil {
			return err
		}
		l.ID, l.AppID, l.Clicks, l.UpdatedAt = id, appID, clicks, now
		if err := CheckLink(l); err != nil {
			return err
		}
		if err := tx.UpdateLink(ctx, l); err != nil {
			return err
		}
		out = l
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "social_link.update", appID, l.Platform, map[string]any{"id": id, "url": l.URL}))
	})
	return out, err
}

// DeleteLink removes a social link.
func (s *Service) DeleteLink(ctx context.Context, actor audit.Actor, appID string, id int64) error {
	now := s.clock()
	return s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.DeleteLink(ctx, appID, id); err != nil {
			return apperr.NotFoundAs(err, "Link")
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "social_link.delete", appID, "", map[string]any{"id": id}))
	})
}

// Entries returns every changelog entry of the app, drafts too, newest first.
func (s *Service) Entries(ctx context.Context, appID string) ([]Entry, error) {
	return s.store.Entries(ctx, appID)
}

// CreateEntry stores a changelog entry, published at once when publish is
// set (event changelog.published).
func (s *Service) CreateEntry(ctx context.Context, actor audit.Actor, e *Entry, publish bool) error {
	if err := CheckEntry(e); err != nil {
		return err
	}
	now := s.clock()
	e.CreatedAt, e.UpdatedAt, e.PublishedAt = now, now, nil
	if publish {
		e.PublishedAt = &now
	}
	return s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.InsertEntry(ctx, e); err != nil {
			return err
		}
		if err := published(ctx, tx, e, nil, now); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "changelog.create", e.AppID, e.Title, map[string]any{"id": e.ID, "published": publish}))
	})
}

// UpdateEntry applies change to a stored entry; publish, when not nil,
// publishes (now) or withdraws it. Going live records changelog.published.
func (s *Service) UpdateEntry(ctx context.Context, actor audit.Actor, appID string, id int64, change func(*Entry) error, publish *bool) (*Entry, error) {
	now := s.clock()
	var out *Entry
	err := s.store.InTx(ctx, func(tx Tx) error {
		e, err := tx.EntryForUpdate(ctx, appID, id)
		if err != nil {
			return apperr.NotFoundAs(err, "Entry")
		}
		before := e.PublishedAt
		if err := change(e); err != nil {
			return err
		}
		e.ID, e.AppID, e.UpdatedAt, e.PublishedAt = id, appID, now, before
		if publish != nil {
			switch {
			case *publish && before == nil:
				e.PublishedAt = &now
			case !*publish:
				e.PublishedAt = nil
			}
		}
		if err := CheckEntry(e); err != nil {
			return err
		}
		if err := tx.UpdateEntry(ctx, e); err != nil {
			return err
		}
		if err := published(ctx, tx, e, before, now); err != nil {
			return err
		}
		out = e
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "changelog.update", appID, e.Title, map[string]any{"id": id, "published": e.PublishedAt != nil}))
	})
	return out, err
}

// published records changelog.published when e went live in this change.
func published(ctx context.Context, tx Tx, e *Entry, before *time.Time, now time.Time) error {
	if e.PublishedAt == nil || before != nil {
		return nil
	}
	return tx.AddEvent(ctx, event.Event{AppID: e.AppID, Type: ChangelogPublished, CreatedAt: now, Data: map[string]any{
		"app_id": e.AppID, "id": e.ID, "version": e.Version, "title": e.Title, "category": e.Category}})
}

// DeleteEntry removes a changelog entry.
func (s *Service) DeleteEntry(ctx context.Context, actor audit.Actor, appID string, id int64) error {
	now := s.clock()
	return s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.DeleteEntry(ctx, appID, id); err != nil {
			return apperr.NotFoundAs(err, "Entry")
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "changelog.delete", appID, "", map[string]any{"id": id}))
	})
}
