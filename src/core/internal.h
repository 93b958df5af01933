/*
 * Every internal header at once, for a file that wants them all (white-box
 * tests, and the scheduler and mailbox). Nothing here is
 * public. Other files include the module headers they use, so their
 * dependencies stay visible; docs/architecture.md states which layer may
 * include which.
 */
#ifndef AC_CORE_INTERNAL_H
#define AC_CORE_INTERNAL_H

/* Base layer. */
#include "core/base.h"
#include "core/last_error.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/sync.h"
#include "log/log_internal.h"

/* Core. */
#include "core/names.h"
#include "core/msg_internal.h"
#include "core/ref.h"
#include "core/mailbox.h"
#include "core/children.h"
#include "core/cell.h"
#include "core/core_msgs.h"
#include "core/props.h"
#include "core/turn.h"
#include "core/lifecycle.h"
#include "core/spawn.h"
#include "core/supervision_internal.h"
#include "core/scheduler.h"
#include "core/timers.h"
#include "core/system_internal.h"
#include "core/hooks.h"

#endif
