/*
 * actorc — an actor runtime in C.
 *
 * The one public header. It includes one header per module; see each for
 * the contract of its functions: who owns each handle (consumes/borrows)
 * and from where a function may be called (any thread, inside an actor,
 * outside actors only).
 */
#ifndef ACTORC_H
#define ACTORC_H

#include "actorc/export.h"
#include "actorc/status.h"
#include "actorc/log.h"
#include "actorc/msg.h"
#include "actorc/system.h"
#include "actorc/actor.h"
#include "actorc/error.h"
#include "actorc/supervision.h"
#include "actorc/timer.h"
#include "actorc/ask.h"
#include "actorc/remote.h"
#include "actorc/router.h"
#include "actorc/scatter_gather.h"
#include "actorc/hedge.h"
#include "actorc/metrics.h"
#include "actorc/observe.h"
#include "actorc/breaker.h"

#endif
