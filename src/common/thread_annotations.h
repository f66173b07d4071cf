// Clang's thread-safety analysis (-Wthread-safety): which lock guards a
// field, which a function needs or takes. The analysis runs in the clang
// build scripts/test.sh makes (the fuzz targets' build, scripts/fuzz.sh,
// with -Werror=thread-safety); other compilers see nothing.
//
//   Mutex mu_;
//   int64_t version_ GUARDED_BY(mu_) = 0;
//   void Publish() EXCLUDES(mu_);       // takes mu_ itself
//   void PublishLocked() REQUIRES(mu_); // its caller holds mu_
//
// Locks are muster::Mutex (common/mutex.h), which the analysis knows;
// std::mutex it does not.
#pragma once

#if defined(__clang__)
#define MUSTER_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define MUSTER_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) MUSTER_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY MUSTER_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) MUSTER_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) MUSTER_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) MUSTER_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) MUSTER_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) MUSTER_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) MUSTER_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) MUSTER_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define RETURN_CAPABILITY(x) MUSTER_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS MUSTER_THREAD_ANNOTATION(no_thread_safety_analysis)
