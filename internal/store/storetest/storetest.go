// Package storetest is the storage conformance suite: every behaviour the
// domain packages (license, admin, analytics, …), the HTTP layer's replay store and the
// journal readers rely on, run against one engine. store_test runs it on
// SQLite and, when KEYWARD_TEST_DATABASE_URL is set, on PostgreSQL.
package storetest

import (
	"testing"

	"github.com/keyward/keyward/internal/store"
)

// Exercise runs the suite as parallel subtests. open must return a fresh,
// migrated, empty database and close it when its test ends; every subtest
// calls it once.
func Exercise(t *testing.T, open func(t *testing.T) *store.DB) {
	tests := []struct {
		name string
		fn   func(t *testing.T, db *store.DB)
	}{
		{"Apps", testApps},
		{"AppConflicts", testAppConflicts},
		{"DeleteAppCascades", testDeleteAppCascades},
		{"KeyRoundTrip", testKeyRoundTrip},
		{"KeyConflictsAndMissing", testKeyConflictsAndMissing},
		{"InsertKeysBatches", testInsertKeysBatches},
		{"TakenKeyStrings", testTakenKeyStrings},
		{"KeyListing", testKeyListing},
		{"Devices", testDevices},
		{"Sessions", testSessions},
		{"LicenseFiles", testLicenseFiles},
		{"SessionListing", testSessionListing},
		{"HeartbeatView", testHeartbeatView},
		{"TouchSessions", testTouchSessions},
		{"ReapSessions", testReapSessions},
		{"InTxRollsBack", testInTxRollsBack},
		{"InTxCommits", testInTxCommits},
		{"GroupCommit", testGroupCommit},
		{"GroupCommitOrder", testGroupCommitOrder},
		{"GroupCommitCancelled", testGroupCommitCancelled},
		{"Events", testEvents},
		{"Audit", testAudit},
		{"ResetRequests", testResetRequests},
		{"Admins", testAdmins},
		{"ServerSecret", testServerSecret},
		{"TeamAdminForJWT", testTeamAdminForJWT},
		{"TeamUpdateAdmin", testTeamUpdateAdmin},
		{"TeamClaimTOTPStep", testTeamClaimTOTPStep},
		{"TeamUseRecoveryCode", testTeamUseRecoveryCode},
		{"TeamTokens", testTeamTokens},
		{"TeamMemberRoles", testTeamMemberRoles},
		{"TeamMembers", testTeamMembers},
		{"TeamAdminForUpdate", testTeamAdminForUpdate},
		{"TeamInTxRollsBack", testTeamInTxRollsBack},
		{"Replay", testReplay},
		{"ReplayErrors", testReplayErrors},
		{"ReplayExpiry", testReplayExpiry},
		{"ReplayConcurrentClaims", testReplayConcurrentClaims},
		{"ConcurrentKeyUpdates", testConcurrentKeyUpdates},
		{"Trials", testTrials},
		{"AccountRoundTrip", testAccountRoundTrip},
		{"AccountConflictsAndMissing", testAccountConflictsAndMissing},
		{"AccountFoldedUsernames", testAccountFoldedUsernames},
		{"AccountListing", testAccountListing},
		{"AccountDevices", testAccountDevices},
		{"AccountSessions", testAccountSessions},
		{"AccountHeartbeatView", testAccountHeartbeatView},
		{"DeleteAccount", testDeleteAccount},
		{"Redemptions", testRedemptions},
		{"LockoutCounters", testLockoutCounters},
		{"LockoutUpdateMany", testLockoutUpdateMany},
		{"LockoutConcurrentReservations", testLockoutConcurrentReservations},
		{"LockoutPurge", testLockoutPurge},
		{"LockoutConcurrentUpdates", testLockoutConcurrentUpdates},
		{"ContentTexts", testContentTexts},
		{"ContentKeyTextsCascade", testContentKeyTextsCascade},
		{"ContentSlides", testContentSlides},
		{"ContentLinks", testContentLinks},
		{"ContentEntries", testContentEntries},
		{"ContentClicks", testContentClicks},
		{"ContentConcurrentClicks", testContentConcurrentClicks},
		{"ContentDeleteAppCascades", testContentDeleteAppCascades},
		{"Plans", testPlans},
		{"Orders", testOrders},
		{"Subscriptions", testSubscriptions},
		{"CustomerHolder", testCustomerHolder},
		{"CustomerAccountHolder", testCustomerAccountHolder},
		{"UpdateReleaseRoundTrip", testUpdateReleaseRoundTrip},
		{"UpdateReleaseConflicts", testUpdateReleaseConflicts},
		{"UpdateReleaseMissing", testUpdateReleaseMissing},
		{"UpdateUpdateRelease", testUpdateUpdateRelease},
		{"UpdateArtifacts", testUpdateArtifacts},
		{"UpdateDeleteRelease", testUpdateDeleteRelease},
		{"UpdateFloors", testUpdateFloors},
		{"UpdateChecks", testUpdateChecks},
		{"UpdateCheckBatch", testUpdateCheckBatch},
		{"UpdateInTxRollsBack", testUpdateInTxRollsBack},
		{"UpdateJournal", testUpdateJournal},
		{"UpdateDeleteAppCascades", testUpdateDeleteAppCascades},
		{"WebhookDestinations", testWebhookDestinations},
		{"WebhookUpdateDeleteDestination", testWebhookUpdateDeleteDestination},
		{"WebhookMissing", testWebhookMissing},
		{"WebhookUndispatchedEvents", testWebhookUndispatchedEvents},
		{"WebhookAddEvent", testWebhookAddEvent},
		{"WebhookInsertDelivery", testWebhookInsertDelivery},
		{"WebhookDueDeliveries", testWebhookDueDeliveries},
		{"WebhookUpdateDelivery", testWebhookUpdateDelivery},
		{"WebhookAttempts", testWebhookAttempts},
		{"WebhookRequeueFailed", testWebhookRequeueFailed},
		{"WebhookDeliveries", testWebhookDeliveries},
		{"WebhookConcurrentClaims", testWebhookConcurrentClaims},
		{"WebhookSubjectOrder", testWebhookSubjectOrder},
		{"WebhookAdvanceSequence", testWebhookAdvanceSequence},
		{"WebhookFanOutSequence", testWebhookFanOutSequence},
		{"WebhookFanOutTurns", testWebhookFanOutTurns},
		{"WebhookBatches", testWebhookBatches},
		{"ExpiryDue", testExpiryDue},
		{"ExpiryExpiring", testExpiryExpiring},
		{"ExpiryAddEvents", testExpiryAddEvents},
		{"AnalyticsUsage", testAnalyticsUsage},
		{"AnalyticsConcurrentUsage", testAnalyticsConcurrentUsage},
		{"AnalyticsSessions", testAnalyticsSessions},
		{"AnalyticsKeysAndVersions", testAnalyticsKeysAndVersions},
		{"AnalyticsDeleteAppCascades", testAnalyticsDeleteAppCascades},
		{"AnalyticsReport", testAnalyticsReport},
		{"ResellerRoundTrip", testResellerRoundTrip},
		{"ResellerBalance", testResellerBalance},
		{"ResellerKeys", testResellerKeys},
		{"ResellerConcurrentDebits", testResellerConcurrentDebits},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}
