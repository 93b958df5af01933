#ifndef ACTORC_EXPORT_H
#define ACTORC_EXPORT_H

#if defined(_WIN32)
#define AC_API
#elif defined(__GNUC__)
#define AC_API __attribute__((visibility("default")))
#else
#define AC_API
#endif

#if defined(__GNUC__)
#define AC_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define AC_PRINTF(fmt, args)
#endif

#define AC_VERSION_MAJOR 0
#define AC_VERSION_MINOR 1
#define AC_VERSION_PATCH 0

#endif
